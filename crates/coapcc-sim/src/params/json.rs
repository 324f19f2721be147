//! An order-preserving JSON value ([`Json`]): the parameters of a run are read and written
//! with their keys in the order they were given (the order of shared transmission parameters
//! is the order of the items of the algorithm specifications they compose).

use std::fmt::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their keys in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Num(serde_json::Number),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, its keys in order.
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// Parse JSON text.
    pub fn parse(text: &str) -> Result<Json, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// The value of key `k` of an object.
    pub fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.iter().find(|(x, _)| x == k).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The JSON text (compact, keys in order).
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) => {
                let _ = write!(out, "{n}");
            }
            Json::Str(s) => out.push_str(&serde_json::to_string(s).expect("a string serialises")),
            Json::Arr(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    x.write(out);
                }
                out.push(']');
            }
            Json::Obj(m) => {
                out.push('{');
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).expect("a string serialises"));
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// As a `serde_json::Value` (objects sorted by key).
    pub fn value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Num(n) => Value::Number(n.clone()),
            Json::Str(s) => Value::String(s.clone()),
            Json::Arr(a) => Value::Array(a.iter().map(Json::value).collect()),
            Json::Obj(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), v.value())).collect()),
        }
    }

    /// From a `serde_json::Value` (objects in its key order).
    pub fn from_value(v: &serde_json::Value) -> Json {
        use serde_json::Value;
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Num(n.clone()),
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(a) => Json::Arr(a.iter().map(Json::from_value).collect()),
            Value::Object(m) => Json::Obj(m.iter().map(|(k, v)| (k.clone(), Json::from_value(v))).collect()),
        }
    }

    /// The value as Python's `repr` would show it in a message (`'text'`, `True`, `None`,
    /// `2.5`, `[1, 2]`).
    pub fn repr(&self) -> String {
        match self {
            Json::Null => "None".into(),
            Json::Bool(true) => "True".into(),
            Json::Bool(false) => "False".into(),
            Json::Num(n) => n.as_f64().filter(|_| n.is_f64()).map_or_else(|| n.to_string(), py_float),
            Json::Str(s) => format!("'{s}'"),
            Json::Arr(a) => format!("[{}]", a.iter().map(Json::repr).collect::<Vec<_>>().join(", ")),
            Json::Obj(m) => {
                format!("{{{}}}", m.iter().map(|(k, v)| format!("'{k}': {}", v.repr())).collect::<Vec<_>>().join(", "))
            }
        }
    }
}

/// A float as Python's `repr` writes it (`2.0`, `0.5`, `nan`, `inf`, `1e+16`).
pub fn py_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        let s = format!("{x:e}");
        // Rust writes 1e16 and 1.5e-7; Python 1e+16 and 1.5e-07.
        match s.split_once('e') {
            Some((m, e)) if x.abs() >= 1e16 || x.abs() < 1e-4 => {
                let (sign, digits) = if let Some(d) = e.strip_prefix('-') { ("-", d) } else { ("+", e) };
                format!("{m}e{sign}{digits:0>2}")
            }
            _ => format!("{x}"),
        }
    }
}

/// A number as Python's `format(x, "g")` writes it (`1`, `0.001`, `1e+09`).
pub fn py_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if (-4..6).contains(&exp) {
        let s = format!("{:.*}", (5 - exp).max(0) as usize, x);
        let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
        return s;
    }
    let m = x / 10f64.powi(exp);
    let ms = format!("{m:.5}");
    let ms = ms.trim_end_matches('0').trim_end_matches('.');
    format!("{ms}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Num(n.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(x).map(Json::Num).ok_or_else(|| E::custom("a non-finite number"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::Str(s.into()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Json::Arr(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Json, A::Error> {
                let mut v: Vec<(String, Json)> = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, Json>()? {
                    match v.iter_mut().find(|(y, _)| *y == k) {
                        Some(slot) => slot.1 = x,
                        None => v.push((k, x)),
                    }
                }
                Ok(Json::Obj(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_order_and_values_print_as_python_does() {
        let j = Json::parse(r#"{"b": 1, "a": [true, null, 2.5, "x"], "c": {"z": 1, "y": 2}}"#).unwrap();
        assert_eq!(j.text(), r#"{"b":1,"a":[true,null,2.5,"x"],"c":{"z":1,"y":2}}"#);
        assert_eq!(j.get("a").unwrap().repr(), "[True, None, 2.5, 'x']");
        assert_eq!(
            (py_float(2.0), py_float(-1.0), py_float(1e16), py_float(f64::NAN)),
            ("2.0".into(), "-1.0".into(), "1e+16".into(), "nan".into())
        );
        assert_eq!(
            (py_g(1.0), py_g(1e9), py_g(0.001), py_g(1e12), py_g(2.5)),
            ("1".into(), "1e+09".into(), "0.001".into(), "1e+12".into(), "2.5".into())
        );
    }
}
