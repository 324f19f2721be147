//! Canonical JSON text as Python writes it: `json.dumps(value, sort_keys=True,
//! separators=(",", ":"), ensure_ascii=True)`, byte for byte, so that a configuration written
//! here and one written by `coapcc.config.canonical_json` after parsing the simulator's JSON
//! report are the same string.
//!
//! What differs from serde_json's own output: floats are spelt as Python's `repr` spells them
//! (`1e-05`, `1e+16`, `100.0`), keys are sorted, and every character outside printable ASCII
//! is escaped (`\u00e9`, surrogate pairs above U+FFFF).

use std::fmt::Write as _;

use serde_json::Value;

/// Append the canonical text of `v` to `out`.
pub fn write(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_u64() {
                let _ = write!(out, "{i}");
            } else if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else {
                float(n.as_f64().unwrap_or(f64::NAN), out);
            }
        }
        Value::String(s) => string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                write(&m[k], out);
            }
            out.push('}');
        }
    }
}

/// A float as Python's `repr` (shortest round-trip digits; exponent form when the decimal
/// point would sit more than 4 places left of the first digit or more than 16 right of it).
fn float(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "d[.ddd]e[-]N".
    let e = format!("{:e}", x.abs());
    let (mantissa, exp) = e.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("LowerExp exponent is an integer");
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1; // value = 0.DIGITS x 10^decpt
    if x.is_sign_negative() {
        out.push('-');
    }
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    } else if decpt <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-decpt) as usize));
        out.push_str(&digits);
    } else if decpt < n {
        out.push_str(&digits[..decpt as usize]);
        out.push('.');
        out.push_str(&digits[decpt as usize..]);
    } else {
        out.push_str(&digits);
        out.push_str(&"0".repeat((decpt - n) as usize));
        out.push_str(".0");
    }
}

/// A string with Python's `ensure_ascii` escapes.
fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: &Value) -> String {
        let mut s = String::new();
        write(v, &mut s);
        s
    }

    /// Expected strings are what CPython 3 prints for `repr(x)` / `json.dumps(...)`.
    #[test]
    fn floats_are_spelt_as_python_repr() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (100.0, "100.0"),
            (0.1, "0.1"),
            (2.5e-3, "0.0025"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.25e-7, "1.25e-07"),
            (123456.789, "123456.789"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-3.75, "-3.75"),
            (0.30000000000000004, "0.30000000000000004"),
            (250000.0, "250000.0"),
        ];
        for (x, want) in cases {
            let mut s = String::new();
            float(*x, &mut s);
            assert_eq!(&s, want, "{x:e}");
        }
    }

    #[test]
    fn objects_sort_keys_and_strings_escape_as_python() {
        let v = serde_json::json!({"b": [1, -2, 1.5, null, true], "a": "x\"\\\n\u{7f}é😀", "A": {}});
        assert_eq!(text(&v), r#"{"A":{},"a":"x\"\\\n\u007f\u00e9\ud83d\ude00","b":[1,-2,1.5,null,true]}"#);
    }
}
