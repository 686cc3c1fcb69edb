//! Tolerant field reading: a field whose value has an unexpected JSON type is absent, not fatal.
//!
//! # Context
//! Claude Code reads its transcripts with `JSON.parse` and looks fields up loosely: an
//! `"agentId":7`, an `"isSidechain":0`, a text block with `"text":123` or a numeric timestamp
//! do not make it drop the message, and a duplicate key means the last value (format.md §B5: no
//! input loses a session). A `serde` derive refuses the whole line on the first such field.
//!
//! # Design
//! [`Loose<T>`] accepts any JSON value: one of the shape `T` takes ([`Shape`]) becomes
//! [`Loose::Set`], `null` becomes [`Loose::Absent`], anything else is consumed without
//! recursion (`IgnoredAny`, which `serde_json` skips iteratively) and becomes
//! [`Loose::Unreadable`]. Objects are read by hand-written map visitors ([`Fields`]) that keep
//! the last value of a duplicate key and record a [`FieldNote`] for every field that could not
//! be read, so the caller can report it with the line's position.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// Something about one field of a line that was read anyway (the line is kept).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FieldNote {
    /// The field has another JSON type than the format's; it was treated as absent.
    Unreadable(String),
    /// The key appears more than once in its object; the last value was used (`JSON.parse`).
    Duplicate(String),
}

impl std::fmt::Display for FieldNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FieldNote::Unreadable(k) => write!(f, "{k} has an unexpected type (treated as absent)"),
            FieldNote::Duplicate(k) => write!(f, "{k} is given twice (the last one is used)"),
        }
    }
}

/// A field read tolerantly.
#[derive(Debug, Default)]
pub enum Loose<T> {
    /// Not in the object, or `null`.
    #[default]
    Absent,
    /// Read.
    Set(T),
    /// Present with a type `T` does not take.
    Unreadable,
}

impl<T> Loose<T> {
    /// The value, if it was read.
    pub fn get(&self) -> Option<&T> {
        match self {
            Loose::Set(v) => Some(v),
            _ => None,
        }
    }
}

impl Loose<Cow<'_, str>> {
    /// The string, if it was read.
    pub fn as_deref(&self) -> Option<&str> {
        self.get().map(AsRef::as_ref)
    }
}

/// The JSON shapes a field type accepts. Every method has a refusing default.
pub trait Shape<'de>: Sized {
    /// From a string.
    fn from_str(_: Cow<'de, str>) -> Option<Self> {
        None
    }
    /// From a boolean.
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    /// From a non-negative integer (without `arbitrary_precision`; with it, numbers come as
    /// a one-entry map, see [`Count`]).
    fn from_u64(_: u64) -> Option<Self> {
        None
    }
    /// From an object (must consume it).
    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    /// From an array (must consume it).
    fn from_seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de> Shape<'de> for Cow<'de, str> {
    fn from_str(s: Cow<'de, str>) -> Option<Self> {
        Some(s)
    }
}

impl Shape<'_> for bool {
    fn from_bool(b: bool) -> Option<Self> {
        Some(b)
    }
}

/// The key `serde_json` (`arbitrary_precision`) uses to hand a number over as a one-entry map.
const NUMBER_KEY: &str = "$serde_json::private::Number";

/// A count: a non-negative integer written as one (`12`; not `12.0`, `-1` or `"12"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count(pub u64);

impl<'de> Shape<'de> for Count {
    fn from_u64(n: u64) -> Option<Self> {
        Some(Count(n))
    }

    fn from_map<A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        // `arbitrary_precision` hands a number over as `{NUMBER_KEY: "<its text>"}`; any other
        // object is not a count.
        let mut out = None;
        let mut object = false;
        while let Some(k) = map.next_key::<Key<'de>>()? {
            if k.0 == NUMBER_KEY && !object {
                let text: String = map.next_value()?;
                out = text.parse::<u64>().ok().map(Count);
            } else {
                object = true;
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(if object { None } else { out })
    }
}

impl<'de, T: Shape<'de>> Deserialize<'de> for Loose<T> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        fn set<T>(v: Option<T>) -> Loose<T> {
            v.map_or(Loose::Unreadable, Loose::Set)
        }
        impl<'de, T: Shape<'de>> Visitor<'de> for V<T> {
            type Value = Loose<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(set(T::from_str(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(set(T::from_str(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(set(T::from_str(Cow::Owned(s))))
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
                Ok(set(T::from_bool(b)))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Loose::Unreadable)
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(set(T::from_u64(n)))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Loose::Unreadable)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Loose::Absent)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Loose::Absent)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Ok(set(T::from_map(map)?))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Ok(set(T::from_seq(seq)?))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An object key, borrowed when it has no escapes.
pub struct Key<'de>(pub Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Reads the fields of one object: the caller matches each key and calls [`Fields::read`] with
/// the field's slot (or skips the value with [`Fields::skip`]).
pub struct Fields<'n, A> {
    map: A,
    seen: u64,
    /// Notes for the fields read so far.
    pub notes: &'n mut Vec<FieldNote>,
    /// Whether this "object" was a number in disguise (`arbitrary_precision`).
    pub number: bool,
}

impl<'de, 'n, A: MapAccess<'de>> Fields<'n, A> {
    /// Starts reading `map`.
    pub fn new(map: A, notes: &'n mut Vec<FieldNote>) -> Self {
        Self {
            map,
            seen: 0,
            notes,
            number: false,
        }
    }

    /// The next key, or `None` at the end.
    pub fn key(&mut self) -> Result<Option<Key<'de>>, A::Error> {
        let k = self.map.next_key::<Key<'de>>()?;
        if k.as_ref().is_some_and(|k| k.0 == NUMBER_KEY) {
            self.number = true;
        }
        Ok(k)
    }

    /// Reads the current value into `slot` (field number `bit` < 64, named `name` in notes).
    pub fn read<T: Shape<'de>>(
        &mut self,
        slot: &mut Loose<T>,
        bit: u32,
        name: &str,
    ) -> Result<(), A::Error> {
        let v: Loose<T> = self.map.next_value()?;
        if self.seen & (1 << bit) != 0 {
            self.notes.push(FieldNote::Duplicate(name.to_owned()));
        }
        self.seen |= 1 << bit;
        if matches!(v, Loose::Unreadable) {
            self.notes.push(FieldNote::Unreadable(name.to_owned()));
        }
        *slot = v;
        Ok(())
    }

    /// Skips the current value (without recursion).
    pub fn skip(&mut self) -> Result<(), A::Error> {
        self.map.next_value::<IgnoredAny>().map(|_| ())
    }
}
