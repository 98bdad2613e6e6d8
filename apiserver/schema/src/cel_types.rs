//! CEL types as kube's checker sees them, and which of CEL's operators and common functions
//! accept which argument types, with cel-go's names for them in errors (`int`, `list(string)`,
//! `map(string, int)`, an object by its path name).
//!
//! Every answer leans to silence: `Dyn` stands for anything not known for certain, is
//! accepted everywhere, and an operator or function applied to a `Dyn` yields `Dyn`. Only
//! functions whose every kube overload is listed here are ever reported.

use serde_json::Value;

/// A CEL type.
#[derive(Clone, Debug)]
pub(crate) enum Ty<'a> {
    /// Not known (or CEL's `dyn`): never an error.
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Ty<'a>>),
    /// Keys, values.
    Map(Box<Ty<'a>>, Box<Ty<'a>>),
    /// An object with declared fields: its schema and its type name (`selfType1.spec`).
    Object(&'a Value, String),
    /// A CRD root's `metadata` (only `name` and `generateName`), by type name.
    RootMetadata(String),
    /// `optional_type(T)` (`oldSelf` of a rule with `optionalOldSelf`): never judged.
    Optional(Box<Ty<'a>>),
}

impl std::fmt::Display for Ty<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Duration => f.write_str("duration"),
            Ty::Timestamp => f.write_str("timestamp"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(_, name) | Ty::RootMetadata(name) => f.write_str(name),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
        }
    }
}

impl Ty<'_> {
    /// Whether nothing is judged about values of this type (`dyn`, optionals).
    pub(crate) fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Optional(_))
    }

    fn is_object(&self) -> bool {
        matches!(self, Ty::Object(..) | Ty::RootMetadata(_))
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// Whether `null` may stand where this type is expected (cel-go's nullable kinds).
    fn is_nullable(&self) -> bool {
        matches!(
            self,
            Ty::Dyn
                | Ty::Null
                | Ty::Duration
                | Ty::Timestamp
                | Ty::Object(..)
                | Ty::RootMetadata(_)
        )
    }
}

/// Whether values of `a` and `b` may be one type parameter's values (`_==_`'s `(A, A)`).
/// Two objects always may: their names are not compared.
pub(crate) fn agree(a: &Ty<'_>, b: &Ty<'_>) -> bool {
    match (a, b) {
        _ if a.is_dyn() || b.is_dyn() => true,
        (Ty::Null, other) | (other, Ty::Null) => other.is_nullable(),
        (Ty::List(x), Ty::List(y)) => agree(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => agree(k1, k2) && agree(v1, v2),
        _ if a.is_object() && b.is_object() => true,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// The type two agreeing types join to: the known one, `Dyn` when they differ in detail.
pub(crate) fn join<'a>(a: &Ty<'a>, b: &Ty<'a>) -> Ty<'a> {
    match (a, b) {
        (Ty::List(x), Ty::List(y)) => Ty::List(Box::new(join(x, y))),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => {
            Ty::Map(Box::new(join(k1, k2)), Box::new(join(v1, v2)))
        }
        _ if a.is_dyn() || b.is_dyn() => Ty::Dyn,
        (Ty::Null, _) | (_, Ty::Null) => Ty::Dyn,
        _ if std::mem::discriminant(a) == std::mem::discriminant(b) && !a.is_object() => a.clone(),
        _ => Ty::Dyn,
    }
}

/// What applying a function to some argument types gives.
pub(crate) enum Applied<'a> {
    /// An overload matches (or nothing is known): the result type.
    Ok(Ty<'a>),
    /// No overload of the function takes these types.
    NoOverload,
}

fn ok(t: Ty<'_>) -> Applied<'_> {
    Applied::Ok(t)
}

/// The result of an operator (`_+_`, `_<_`, `!_`, `_[_]`, `@in`, `_?_:_`, …) on `args`.
/// `_&&_` and `_||_` are not here: their operands are checked one by one.
pub(crate) fn operator<'a>(name: &str, args: &[Ty<'a>]) -> Applied<'a> {
    use Ty::*;
    if args.iter().any(Ty::is_dyn) && !matches!(name, "_?_:_" | "_[_]" | "@in" | "_==_" | "_!=_") {
        return ok(result_of_dyn(name));
    }
    match (name, args) {
        ("_==_" | "_!=_", [a, b]) => {
            if agree(a, b) {
                ok(Bool)
            } else {
                Applied::NoOverload
            }
        }
        ("_<_" | "_<=_" | "_>_" | "_>=_", [a, b]) => {
            let same = std::mem::discriminant(a) == std::mem::discriminant(b)
                && matches!(
                    a,
                    Bool | Int | Uint | Double | String | Bytes | Timestamp | Duration
                );
            if same || (a.is_numeric() && b.is_numeric()) {
                ok(Bool)
            } else {
                Applied::NoOverload
            }
        }
        ("_+_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) | (Double, Double) | (String, String) | (Bytes, Bytes) => {
                ok(a.clone())
            }
            (Duration, Duration) => ok(Duration),
            (Timestamp, Duration) | (Duration, Timestamp) => ok(Timestamp),
            (List(x), List(y)) if agree(x, y) => ok(List(Box::new(join(x, y)))),
            _ => Applied::NoOverload,
        },
        ("_-_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) | (Double, Double) => ok(a.clone()),
            (Duration, Duration) | (Timestamp, Timestamp) => ok(Duration),
            (Timestamp, Duration) => ok(Timestamp),
            _ => Applied::NoOverload,
        },
        ("_*_" | "_/_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) | (Double, Double) => ok(a.clone()),
            _ => Applied::NoOverload,
        },
        ("_%_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) => ok(a.clone()),
            _ => Applied::NoOverload,
        },
        ("-_", [a]) => match a {
            Int | Double => ok(a.clone()),
            _ => Applied::NoOverload,
        },
        ("!_", [a]) => match a {
            Bool => ok(Bool),
            _ => Applied::NoOverload,
        },
        ("_?_:_", [c, a, b]) => {
            if (matches!(c, Bool) || c.is_dyn()) && agree(a, b) {
                ok(join(a, b))
            } else {
                Applied::NoOverload
            }
        }
        ("_[_]", [container, key]) => match container {
            _ if container.is_dyn() => ok(Dyn),
            List(e) if matches!(key, Int) || key.is_dyn() => ok((**e).clone()),
            Map(k, v) if agree(k, key) => ok((**v).clone()),
            // Objects by index, and anything else: not judged.
            _ if container.is_object() => ok(Dyn),
            _ => Applied::NoOverload,
        },
        ("@in", [element, container]) => match container {
            _ if container.is_dyn() => ok(Bool),
            List(e) | Map(e, _) if agree(element, e) => ok(Bool),
            List(_) | Map(..) => Applied::NoOverload,
            _ if container.is_object() => ok(Bool),
            _ => Applied::NoOverload,
        },
        _ => ok(Dyn),
    }
}

/// An operator's result type when an argument is `Dyn`.
fn result_of_dyn(name: &str) -> Ty<'static> {
    match name {
        "_<_" | "_<=_" | "_>_" | "_>=_" | "!_" => Ty::Bool,
        _ => Ty::Dyn,
    }
}

/// The result of the function `name` called on `target` (member call) or globally with
/// `args`; `Applied::Ok(Dyn)` for functions not listed here.
pub(crate) fn function<'a>(name: &str, target: Option<&Ty<'a>>, args: &[Ty<'a>]) -> Applied<'a> {
    use Ty::*;
    let sized = |t: &Ty<'_>| matches!(t, String | Bytes | List(_) | Map(..) | Dyn);
    let string_args = |types: &[&[Ty<'_>]]| -> bool {
        types.iter().any(|want| {
            want.len() == args.len()
                && want.iter().zip(args).all(|(w, a)| {
                    a.is_dyn() || std::mem::discriminant(w) == std::mem::discriminant(a)
                })
        })
    };
    let applied = |known: bool, result: Ty<'a>| {
        if known {
            ok(result)
        } else {
            Applied::NoOverload
        }
    };
    match (name, target) {
        // Conversions give their type whatever they convert (not judged).
        (
            "int" | "uint" | "double" | "string" | "bool" | "bytes" | "duration" | "timestamp",
            None,
        ) if args.len() == 1 => ok(match name {
            "int" => Int,
            "uint" => Uint,
            "double" => Double,
            "string" => String,
            "bool" => Bool,
            "bytes" => Bytes,
            "duration" => Duration,
            _ => Timestamp,
        }),
        ("size", None) => match args {
            [a] => applied(sized(a), Int),
            _ => ok(Dyn),
        },
        ("size", Some(t)) if args.is_empty() => applied(sized(t), Int),
        ("matches", None) if args.len() == 2 => {
            applied(args.iter().all(|a| matches!(a, String | Dyn)), Bool)
        }
        ("startsWith" | "endsWith" | "contains" | "matches", Some(t)) => {
            applied(matches!(t, String | Dyn) && string_args(&[&[String]]), Bool)
        }
        ("lowerAscii" | "upperAscii" | "trim", Some(t)) => {
            applied(matches!(t, String | Dyn) && args.is_empty(), String)
        }
        ("charAt", Some(t)) => applied(matches!(t, String | Dyn) && string_args(&[&[Int]]), String),
        ("substring", Some(t)) => applied(
            matches!(t, String | Dyn) && string_args(&[&[Int], &[Int, Int]]),
            String,
        ),
        ("replace", Some(t)) => applied(
            matches!(t, String | Dyn) && string_args(&[&[String, String], &[String, String, Int]]),
            String,
        ),
        ("split", Some(t)) => applied(
            matches!(t, String | Dyn) && string_args(&[&[String], &[String, Int]]),
            List(Box::new(String)),
        ),
        ("indexOf" | "lastIndexOf", Some(t)) => match t {
            List(e) => applied(args.len() == 1 && agree(e, &args[0]), Int),
            String => applied(string_args(&[&[String], &[String, Int]]), Int),
            Dyn => ok(Int),
            _ => Applied::NoOverload,
        },
        ("join", Some(t)) => match t {
            List(e) if matches!(**e, String | Dyn) => {
                applied(string_args(&[&[], &[String]]), String)
            }
            Dyn => ok(String),
            _ => Applied::NoOverload,
        },
        _ => ok(Dyn),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(t: Ty<'static>) -> Ty<'static> {
        Ty::List(Box::new(t))
    }

    #[test]
    fn names_read_as_cel_go_prints_them() {
        let m = Ty::Map(Box::new(Ty::String), Box::new(list(Ty::Int)));
        assert_eq!(m.to_string(), "map(string, list(int))");
        assert_eq!(Ty::Timestamp.to_string(), "timestamp");
    }

    #[test]
    fn operators_take_their_overloads_and_dyn_passes() {
        assert!(matches!(
            operator("_>_", &[Ty::String, Ty::Int]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("_>_", &[Ty::Double, Ty::Int]),
            Applied::Ok(Ty::Bool)
        ));
        assert!(matches!(
            operator("_==_", &[Ty::String, Ty::Int]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("_==_", &[Ty::String, Ty::Null]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("_==_", &[Ty::Dyn, Ty::Int]),
            Applied::Ok(Ty::Bool)
        ));
        assert!(matches!(
            operator("_+_", &[Ty::Int, Ty::Dyn]),
            Applied::Ok(Ty::Dyn)
        ));
        assert!(matches!(
            operator("_+_", &[list(Ty::Int), list(Ty::Int)]),
            Applied::Ok(Ty::List(_))
        ));
        assert!(matches!(
            operator("_%_", &[Ty::Double, Ty::Double]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("@in", &[Ty::String, list(Ty::Int)]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("_[_]", &[Ty::String, Ty::Int]),
            Applied::NoOverload
        ));
        assert!(matches!(
            operator("_?_:_", &[Ty::Bool, Ty::Int, Ty::String]),
            Applied::NoOverload
        ));
    }

    #[test]
    fn functions_check_only_what_they_know() {
        assert!(matches!(
            function("size", None, &[Ty::Int]),
            Applied::NoOverload
        ));
        assert!(matches!(
            function("startsWith", Some(&Ty::Int), &[Ty::String]),
            Applied::NoOverload
        ));
        assert!(matches!(
            function("startsWith", Some(&Ty::String), &[Ty::Int]),
            Applied::NoOverload
        ));
        assert!(matches!(
            function("indexOf", Some(&list(Ty::Int)), &[Ty::Int]),
            Applied::Ok(Ty::Int)
        ));
        assert!(matches!(
            function("quantity", None, &[Ty::Int]),
            Applied::Ok(Ty::Dyn)
        ));
        assert!(matches!(
            function("string", None, &[Ty::Int]),
            Applied::Ok(Ty::String)
        ));
        assert!(matches!(
            function("split", Some(&Ty::String), &[Ty::String]),
            Applied::Ok(Ty::List(_))
        ));
    }
}
