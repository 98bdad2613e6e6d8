//! Sizes from the values an expression is about to be evaluated with: at each path the
//! largest value found there (the longest string among a list's items, the longest list
//! among a map's values…), so an estimate made with them bounds the evaluation.

use std::cell::OnceCell;

use kube_cel::cel;
use serde_json::Value;

use super::{Kind, Seg, Size, Sizes};

/// A value whose sizes can be read: JSON (custom resources) or CEL (admission policies).
pub trait SizedValue: Copy {
    /// Its kind and size (characters of a string, items of a list, entries of a map).
    fn size(self) -> Size;
    /// The value of a field or map entry.
    fn field(self, name: &str) -> Option<Self>;
    /// Its list items or map values.
    fn elements(self) -> Vec<Self>;
    /// The length of its longest map key.
    fn longest_key(self) -> u64;
}

impl SizedValue for &Value {
    fn size(self) -> Size {
        match self {
            Value::String(s) => Size::new(Kind::Text, s.chars().count() as u64),
            Value::Array(a) => Size::new(Kind::List, a.len() as u64),
            Value::Object(m) => Size::new(Kind::Map, m.len() as u64),
            _ => Size::SCALAR,
        }
    }

    fn field(self, name: &str) -> Option<Self> {
        self.get(name)
    }

    fn elements(self) -> Vec<Self> {
        match self {
            Value::Array(a) => a.iter().collect(),
            Value::Object(m) => m.values().collect(),
            _ => Vec::new(),
        }
    }

    fn longest_key(self) -> u64 {
        self.as_object().map_or(0, |m| {
            m.keys()
                .map(|k| k.chars().count() as u64)
                .max()
                .unwrap_or(0)
        })
    }
}

impl SizedValue for &cel::Value {
    fn size(self) -> Size {
        match self {
            cel::Value::String(s) => Size::new(Kind::Text, s.chars().count() as u64),
            cel::Value::Bytes(b) => Size::new(Kind::Text, b.len() as u64),
            cel::Value::List(l) => Size::new(Kind::List, l.len() as u64),
            cel::Value::Map(m) => Size::new(Kind::Map, m.map.len() as u64),
            _ => Size::SCALAR,
        }
    }

    fn field(self, name: &str) -> Option<Self> {
        match self {
            cel::Value::Map(m) => m.map.iter().find_map(|(k, v)| match k {
                cel::objects::Key::String(s) if s.as_str() == name => Some(v),
                _ => None,
            }),
            _ => None,
        }
    }

    fn elements(self) -> Vec<Self> {
        match self {
            cel::Value::List(l) => l.iter().collect(),
            cel::Value::Map(m) => m.map.values().collect(),
            _ => Vec::new(),
        }
    }

    fn longest_key(self) -> u64 {
        match self {
            cel::Value::Map(m) => m
                .map
                .keys()
                .map(|k| match k {
                    cel::objects::Key::String(s) => s.chars().count() as u64,
                    _ => 1,
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        }
    }
}

/// The sizes of the named variables' values.
pub struct ValueSizes<'a, V> {
    vars: Vec<(&'a str, V)>,
    total: OnceCell<u64>,
}

impl<'a, V: SizedValue> ValueSizes<'a, V> {
    /// Sizes of `vars` (name, value).
    pub fn new(vars: Vec<(&'a str, V)>) -> ValueSizes<'a, V> {
        ValueSizes {
            vars,
            total: OnceCell::new(),
        }
    }
}

/// Everything in a value: characters of its strings and keys, one per other value.
fn weight<V: SizedValue>(v: V) -> u64 {
    let own = match v.size() {
        Size {
            kind: Kind::Text,
            max,
        } => max,
        _ => 1,
    };
    v.elements()
        .into_iter()
        .fold(own.saturating_add(v.longest_key()), |acc, e| {
            acc.saturating_add(weight(e))
        })
}

impl<V: SizedValue> Sizes for ValueSizes<'_, V> {
    fn lookup(&self, path: &[Seg]) -> Option<Size> {
        let (Seg::Field(name), rest) = path.split_first()? else {
            return None;
        };
        let (_, root) = self.vars.iter().find(|(n, _)| n == name)?;
        let mut values = vec![*root];
        for seg in rest {
            values = match seg {
                Seg::Field(f) => values.into_iter().filter_map(|v| v.field(f)).collect(),
                Seg::Elem => values.into_iter().flat_map(|v| v.elements()).collect(),
                Seg::Key => {
                    let longest = values.into_iter().map(|v| v.longest_key()).max();
                    return Some(Size::new(Kind::Text, longest.unwrap_or(0)));
                }
            };
        }
        // Nothing there: the expression cannot range over it.
        let mut found = values.into_iter().map(|v| v.size());
        let first = found.next().unwrap_or(Size::new(Kind::Unknown, 0));
        Some(found.fold(first, Size::union))
    }

    fn unknown(&self) -> u64 {
        *self.total.get_or_init(|| {
            self.vars
                .iter()
                .fold(1u64, |acc, (_, v)| acc.saturating_add(weight(*v)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_largest_value_at_a_path_counts() {
        let v =
            json!({"items": [{"name": "a"}, {"name": "abcd"}, {}], "labels": {"long-key": "x"}});
        let cv = crate::to_cel(&v);
        let elem_name = [
            Seg::Field("self".into()),
            Seg::Field("items".into()),
            Seg::Elem,
            Seg::Field("name".into()),
        ];
        let json_sizes = ValueSizes::new(vec![("self", &v)]);
        let cel_sizes = ValueSizes::new(vec![("self", &cv)]);
        for sizes in [&json_sizes as &dyn Sizes, &cel_sizes] {
            assert_eq!(sizes.lookup(&elem_name), Some(Size::new(Kind::Text, 4)));
            assert_eq!(
                sizes.lookup(&elem_name[..2]),
                Some(Size::new(Kind::List, 3))
            );
            let key = [
                Seg::Field("self".into()),
                Seg::Field("labels".into()),
                Seg::Key,
            ];
            assert_eq!(sizes.lookup(&key), Some(Size::new(Kind::Text, 8)));
            assert_eq!(sizes.lookup(&[Seg::Field("other".into())]), None);
            // 1 (object) + 5 + 8 (keys) + 1 (list) + 3 objects + 4 (keys) + 5 chars + 1 + 8 + 1.
            assert!(
                sizes.unknown() > 20 && sizes.unknown() < 60,
                "{}",
                sizes.unknown()
            );
        }
    }
}
