//! `closed_set!`: an enum of a fixed set, its `ALL` list and its text, generated from one list.
//!
//! Tables that iterate a fixed set (counters declared at 0 for every result, say) read `ALL`; a
//! list kept by hand beside the enum compiles when a new variant is missing from it, and the
//! table then silently lacks the new value. Declaring both from one list makes that impossible.

/// Declares `enum $name` with `ALL` (every variant, in order) and `as_str` (its text).
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            /// The text it is written as.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $text ),+
                }
            }
        }
    };
}

pub(crate) use closed_set;

#[cfg(test)]
mod tests {
    closed_set! {
        /// A set for the test.
        enum Fruit {
            Apple => "apple",
            /// With a comment.
            Pear => "pear",
        }
    }

    #[test]
    fn all_lists_every_variant_in_order_with_its_text() {
        let texts: Vec<&str> = Fruit::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(texts, ["apple", "pear"]);
        assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::Pear]);
    }
}
