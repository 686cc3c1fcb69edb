//! Message ids as 16 fixed bytes.
//!
//! Claude Code ids are UUIDs; a few writers and tests use other strings. A UUID (any case)
//! is stored as its 16 bytes; anything else is hashed with blake3 to 16 bytes and its text
//! kept beside it, so printing an id always gives back what the file said.

use std::fmt;

/// A message id: the 16 bytes of a UUID, or a blake3 digest of a non-UUID id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(pub [u8; 16]);

// Serialised as 16 raw bytes (not a sequence of 16 integers): index rows stay small.
impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("16 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Id, E> {
                v.try_into()
                    .map(Id)
                    .map_err(|_| E::invalid_length(v.len(), &self))
            }
        }
        d.deserialize_bytes(V)
    }
}

impl Id {
    /// The id of `text`, and whether `text` is a UUID (so [`Id`]'s `Display` reproduces it,
    /// up to case, without a side table).
    pub fn of(text: &str) -> (Id, bool) {
        match uuid::Uuid::try_parse(text) {
            // Upper-case UUIDs print lower-case: ids compare case-insensitively.
            Ok(u) if text.len() == 36 => (Id(*u.as_bytes()), true),
            _ => {
                let h = blake3::hash(text.as_bytes());
                let mut b = [0u8; 16];
                b.copy_from_slice(&h.as_bytes()[..16]);
                (Id(b), false)
            }
        }
    }

    /// Shorthand for `Id::of(text).0`.
    pub fn from_text(text: &str) -> Id {
        Id::of(text).0
    }
}

// No `Display`: the bytes of a non-UUID id are a hash, and printed as a UUID they would name
// a message no file mentions. Text for people goes through [`IdNames::name`].
impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", uuid::Uuid::from_bytes(self.0).hyphenated())
    }
}

/// Id texts that [`Id`]'s `Display` would not reproduce (non-UUID ids).
#[derive(Debug, Default, Clone)]
pub struct IdNames(std::collections::HashMap<Id, Box<str>>);

impl IdNames {
    /// Interns `text`, remembering it when needed, and returns its id.
    pub fn intern(&mut self, text: &str) -> Id {
        let (id, canonical) = Id::of(text);
        if !canonical {
            self.0.entry(id).or_insert_with(|| text.into());
        }
        id
    }

    /// The text of `id` as the transcript wrote it.
    pub fn name(&self, id: Id) -> String {
        let mut out = Vec::with_capacity(36);
        self.write_name(id, &mut out);
        String::from_utf8(out).expect("names are text")
    }

    /// Appends the text of `id` as the transcript wrote it to `out` (no allocation for a
    /// UUID: what a resume does for every line it hands over).
    pub fn write_name(&self, id: Id, out: &mut Vec<u8>) {
        // Most transcripts name no non-UUID id: no hash then.
        if let Some(text) = (!self.0.is_empty()).then(|| self.0.get(&id)).flatten() {
            out.extend_from_slice(text.as_bytes());
        } else {
            let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
            out.extend_from_slice(
                uuid::Uuid::from_bytes(id.0)
                    .hyphenated()
                    .encode_lower(&mut buf)
                    .as_bytes(),
            );
        }
    }

    /// Adds the names of `later` that this does not hold: the names of ids met after this
    /// one's (the first spelling of an id is its name, as [`IdNames::intern`] keeps it).
    pub fn merge(&mut self, later: IdNames) {
        for (id, text) in later.0 {
            self.0.entry(id).or_insert(text);
        }
    }

    /// Non-canonical names, for storing beside an index.
    pub fn iter(&self) -> impl Iterator<Item = (&Id, &str)> {
        self.0.iter().map(|(k, v)| (k, &**v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialise_as_16_bytes() {
        let id = Id::from_text("00000000-0000-4000-8000-0000000000ff");
        let bytes = rmp_serde::to_vec(&id).unwrap();
        assert_eq!(bytes.len(), 18, "bin8 header + 16 bytes: {bytes:02x?}");
        assert_eq!(rmp_serde::from_slice::<Id>(&bytes).unwrap(), id);
    }

    #[test]
    fn uuid_and_non_uuid_ids_round_trip_through_names() {
        let mut names = IdNames::default();
        let a = names.intern("00000000-0000-4000-8000-00000000000a");
        let b = names.intern("msg_01ABC");
        let c = names.intern("00000000-0000-4000-8000-00000000000A");
        assert_eq!(names.name(a), "00000000-0000-4000-8000-00000000000a");
        assert_eq!(names.name(c), "00000000-0000-4000-8000-00000000000a");
        assert_eq!(names.name(b), "msg_01ABC");
        assert_eq!(a, c, "UUIDs compare case-insensitively");
        assert_ne!(a, b);
    }
}
