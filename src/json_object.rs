//! `Deserialize` for plain structs read from JSON objects, written by [`deserialize_object!`].
//!
//! It behaves like `#[derive(Deserialize)]` on an object: keys by name, unknown keys
//! ignored, `duplicate field` and `missing field` errors, `expecting` "struct Name". The
//! derived impl also reads a struct from a JSON array (fields in order), which nothing here
//! ever writes; that half is ~10 KB of wasm over the crate's structs, so it is left out: an
//! array is "invalid type: sequence, expected struct Name".

/// `deserialize_object!(Type, "struct Type" { field: FieldType = "jsonKey" [required], ... })`;
/// a field is `[required]` or `[default]` (`Default::default()` when the key is missing, like
/// `#[serde(default)]`).
macro_rules! deserialize_object {
    ($ty:ident, $expecting:literal {
        $($field:ident : $fty:ty = $key:literal [$kind:ident]),* $(,)?
    }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;

                impl<'de> serde::de::Visitor<'de> for ObjectVisitor {
                    type Value = $ty;

                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str($expecting)
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$ty, A::Error> {
                        $(let mut $field: Option<$fty> = None;)*
                        while let Some(key) = map.next_key::<String>()? {
                            match key.as_str() {
                                $($key => {
                                    if $field.is_some() {
                                        return Err(serde::de::Error::duplicate_field($key));
                                    }
                                    $field = Some(map.next_value()?);
                                })*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        $(let $field = $crate::json_object::deserialize_object!(@missing $field, $key, $kind);)*
                        Ok($ty { $($field),* })
                    }
                }

                d.deserialize_map(ObjectVisitor)
            }
        }
    };
    (@missing $field:ident, $key:literal, required) => {
        match $field {
            Some(v) => v,
            None => return Err(serde::de::Error::missing_field($key)),
        }
    };
    (@missing $field:ident, $key:literal, default) => {
        $field.unwrap_or_default()
    };
}

pub(crate) use deserialize_object;

/// `Deserialize` for an enum of unit variants, as `#[derive(Deserialize)]` reads it (a string,
/// or the `{"variant": null}` form, with the same errors), through one shared visitor
/// instead of a visitor pair per enum:
/// `deserialize_unit_enum!(Role, "Role" { User = "user", Assistant = "assistant" })`.
macro_rules! deserialize_unit_enum {
    ($ty:ident, $name:literal { $($variant:ident = $text:literal),* $(,)? }) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                const VARIANTS: &[&str] = &[$($text),*];
                const ALL: &[$ty] = &[$($ty::$variant),*];
                let i = $crate::json_object::unit_variant(d, $name, VARIANTS)?;
                Ok(ALL[i])
            }
        }
    };
}

pub(crate) use deserialize_unit_enum;

/// The index in `variants` of the unit variant `d` holds.
pub(crate) fn unit_variant<'de, D: serde::Deserializer<'de>>(
    d: D,
    name: &'static str,
    variants: &'static [&'static str],
) -> Result<usize, D::Error> {
    use serde::de::{DeserializeSeed, EnumAccess, Error, VariantAccess, Visitor};

    struct UnitVariant(&'static [&'static str]);

    impl<'de> Visitor<'de> for UnitVariant {
        type Value = usize;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("variant identifier")
        }

        // The name is checked inside the deserializer, as the derived impl does, so that
        // serde_json adds the position to an unknown variant's error.
        fn visit_str<E: Error>(self, name: &str) -> Result<usize, E> {
            let i = self.0.iter().position(|v| *v == name);
            i.ok_or_else(|| E::unknown_variant(name, self.0))
        }

        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<usize, A::Error> {
            let (i, access) = data.variant_seed(self)?;
            access.unit_variant()?;
            Ok(i)
        }
    }

    impl<'de> DeserializeSeed<'de> for UnitVariant {
        type Value = usize;

        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
            d.deserialize_identifier(self)
        }
    }

    d.deserialize_enum(name, variants, UnitVariant(variants))
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum DerivedKind {
        Plain,
        Fancy,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum OurKind {
        Plain,
        Fancy,
    }

    deserialize_unit_enum!(OurKind, "OurKind" { Plain = "plain", Fancy = "fancy" });

    #[test]
    fn unit_enums_read_as_the_derived_impl_reads_them() {
        for text in [
            r#""plain""#,
            r#""fancy""#,
            r#""other""#,
            r#""Plain""#,
            r#"{"fancy":null}"#,
            r#"{"fancy":5}"#,
            r#"{"nope":null}"#,
            r#"5"#,
            r#"null"#,
            r#"["plain"]"#,
            r#""#,
        ] {
            let derived = serde_json::from_str::<DerivedKind>(text)
                .map(|k| k as u8)
                .map_err(|e| e.to_string());
            let ours = serde_json::from_str::<OurKind>(text)
                .map(|k| k as u8)
                .map_err(|e| e.to_string());
            assert_eq!(derived, ours, "{text}");
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Derived {
        id: String,
        count: u64,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[derive(Debug, PartialEq)]
    struct Ours {
        id: String,
        count: u64,
        note: Option<String>,
        tags: Vec<String>,
    }

    deserialize_object!(Ours, "struct Derived" {
        id: String = "id" [required],
        count: u64 = "count" [required],
        note: Option<String> = "note" [default],
        tags: Vec<String> = "tags" [default],
    });

    #[test]
    fn objects_read_as_the_derived_impl_reads_them() {
        for text in [
            r#"{"id":"a","count":3}"#,
            r#"{"count":3,"id":"a","note":"n","tags":["x"],"other":{"deep":[1,2]}}"#,
            r#"{"id":"a","count":3,"note":null}"#,
            r#"{"id":"a"}"#,
            r#"{"count":1}"#,
            r#"{"id":"a","count":1,"id":"b"}"#,
            r#"{"id":"a","count":1.5}"#,
            r#"{"id":7,"count":1}"#,
            r#""text""#,
            r#"null"#,
            r#"5"#,
            r#"{"id":"a","count":1"#,
        ] {
            let derived = serde_json::from_str::<Derived>(text)
                .map(|d| (d.id, d.count, d.note, d.tags))
                .map_err(|e| e.to_string());
            let ours = serde_json::from_str::<Ours>(text)
                .map(|d| (d.id, d.count, d.note, d.tags))
                .map_err(|e| e.to_string());
            assert_eq!(derived, ours, "{text}");
        }
        // The one difference: arrays.
        assert!(serde_json::from_str::<Derived>(r#"["a",1]"#).is_ok());
        assert_eq!(
            serde_json::from_str::<Ours>(r#"["a",1]"#)
                .unwrap_err()
                .to_string(),
            "invalid type: sequence, expected struct Derived at line 1 column 0"
        );
    }
}
