//! Closed sets: an enum declared with `closed_set!` gets an `ALL` array of its variants, made from
//! the declaration itself, so a new variant is in every table that iterates `ALL` the moment it
//! compiles — no hand-kept list to forget. (Tables that `match` on the enum are already forced
//! to name it by the compiler.)

/// Declares a field-less enum and `ALL`, its variants in declaration order. Written with
/// `Variant => "text"`, the enum also gets `as_str` and the usual comparison derives.
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
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
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];
        }
    };
}

pub(crate) use closed_set;

#[cfg(test)]
mod tests {
    closed_set! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Sample {
            /// Documented variants keep their docs.
            First,
            Second,
        }
    }

    closed_set! {
        /// A set with its texts.
        enum Fruit {
            Apple => "apple",
            /// With a comment.
            Pear => "pear",
        }
    }

    #[test]
    fn all_lists_every_variant_in_order() {
        assert_eq!(Sample::ALL, [Sample::First, Sample::Second]);
    }

    #[test]
    fn all_lists_every_variant_in_order_with_its_text() {
        let texts: Vec<&str> = Fruit::ALL.iter().map(|f| f.as_str()).collect();
        assert_eq!(texts, ["apple", "pear"]);
        assert_eq!(Fruit::ALL, [Fruit::Apple, Fruit::Pear]);
    }
}
