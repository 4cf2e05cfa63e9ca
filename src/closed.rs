//! Closed sets: an enum declared with `closed_set!` gets an `ALL` array of its variants, made from
//! the declaration itself, so a new variant is in every table that iterates `ALL` the moment it
//! compiles — no hand-kept list to forget. (Tables that `match` on the enum are already forced
//! to name it by the compiler.)

/// Declares a field-less enum and `ALL`, its variants in declaration order.
macro_rules! closed_set {
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

    #[test]
    fn all_lists_every_variant_in_order() {
        assert_eq!(Sample::ALL, [Sample::First, Sample::Second]);
    }
}
