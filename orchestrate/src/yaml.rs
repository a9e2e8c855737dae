//! The one YAML writer: the `--dry-run` pods and the evidence bundle's files, in kubectl's layout with keys sorted.
//!
//! Every string that a YAML 1.1 reader (kubectl's, PyYAML) could take for something else is quoted: `serde_yaml`
//! writes YAML 1.2, where `on`, `yes` or `2026-01-01T00:05:00Z` are plain strings, and a 1.1 reader then sees a
//! boolean or a timestamp where the API wants a string. Anything serializable goes through its JSON form, so what is
//! written reads back as the same JSON.

use serde::Serialize;
use serde_json::{Map, Value};

/// `value` as one YAML document (no `---`).
pub fn document<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    write_document(&serde_json::to_value(value)?, &mut out);
    Ok(out)
}

/// The values as a multi-document stream, each document opened by `---`.
pub fn documents<T: Serialize>(
    values: impl IntoIterator<Item = T>,
) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    for value in values {
        out.push_str("---\n");
        write_document(&serde_json::to_value(value)?, &mut out);
    }
    Ok(out)
}

fn write_document(value: &Value, out: &mut String) {
    match value {
        Value::Object(m) if !m.is_empty() => write_map(m, 0, out),
        Value::Array(a) if !a.is_empty() => write_seq(a, 0, out),
        Value::Object(_) => out.push_str("{}\n"),
        Value::Array(_) => out.push_str("[]\n"),
        other => {
            out.push_str(&plain(other));
            out.push('\n');
        }
    }
}

fn write_map(object: &Map<String, Value>, indent: usize, out: &mut String) {
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort();
    for (i, key) in keys.into_iter().enumerate() {
        // The first key of a map inside a sequence follows its "- ".
        if i > 0 || !out.ends_with("- ") {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&scalar(key));
        out.push(':');
        write_value(&object[key], indent, out);
    }
}

fn write_value(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Object(m) if m.is_empty() => out.push_str(" {}\n"),
        Value::Array(a) if a.is_empty() => out.push_str(" []\n"),
        Value::Object(m) => {
            out.push('\n');
            write_map(m, indent + 2, out);
        }
        Value::Array(a) => {
            out.push('\n');
            write_seq(a, indent, out);
        }
        other => {
            out.push(' ');
            out.push_str(&plain(other));
            out.push('\n');
        }
    }
}

fn write_seq(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        match item {
            Value::Object(m) if !m.is_empty() => {
                out.push(' ');
                write_map(m, indent + 2, out);
            }
            Value::Array(a) if !a.is_empty() => {
                out.push('\n');
                write_seq(a, indent + 2, out);
            }
            other => write_value(other, indent, out),
        }
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => scalar(s),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// A string as a YAML scalar: plain when no YAML 1.1 or 1.2 reader can take it for anything but that string, else
/// single-quoted, else (control characters) double-quoted with escapes.
fn scalar(s: &str) -> String {
    const SPECIAL: &[&str] = &["y", "yes", "n", "no", "true", "false", "on", "off", "null"];
    let b = s.as_bytes();
    // A word: a letter, `/` or `_` first (or `-` then a letter or `-`: a flag); `:` only inside (`host:port`, a URL).
    let word = match b {
        [first, ..] if first.is_ascii_alphabetic() || *first == b'/' || *first == b'_' => true,
        [b'-', second, ..] if second.is_ascii_alphabetic() => true,
        [b'-', b'-', third, ..] => third.is_ascii_alphabetic(),
        _ => false,
    } && b
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || b"-_./:".contains(c))
        && !s.ends_with(':')
        && !(b[0] == b'-' && s.contains(':'))
        && !SPECIAL.contains(&s.to_ascii_lowercase().as_str());
    // A quantity (`64Mi`, `10m`): digits, then letters; no leading 0 (`0x1F` is a number).
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let quantity = digits > 0
        && !s.starts_with('0')
        && s.len() > digits
        && s.bytes().skip(digits).all(|b| b.is_ascii_alphabetic());
    if word || quantity {
        return s.to_owned();
    }
    let printable =
        |c: char| !(c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}'));
    if s.chars().all(printable) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c if !printable(c) => q.push_str(&format!("\\u{:04X}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[test]
    fn yaml_scalars_read_back_as_the_same_strings() {
        for plain in [
            "abc",
            "jr2.dev/preflight-deadline",
            "/etc/jr2/ca",
            "64Mi",
            "10m",
            "IfNotPresent",
            "_x",
            "--spec-json",
            "-c",
            "http://127.0.0.1:15001",
            "registry.example.com/jr2/jr2-probe:0.1.0",
            "a:b",
            "-x",
        ] {
            let back: BTreeMap<String, String> =
                serde_yaml::from_str(&format!("k: {plain}\n")).unwrap();
            assert_eq!(back["k"], plain);
            assert_eq!(scalar(plain), plain);
        }
        for quoted in [
            "",
            "on",
            "Off",
            "yes",
            "Y",
            "n",
            "NO",
            "true",
            "False",
            "null",
            "~",
            "2026-01-01",
            "2026-01-01T00:05:00.000Z",
            "0x1F",
            "0o17",
            "017",
            "1e3",
            "1:20",
            ".5",
            ".inf",
            "-",
            "- a",
            ": x",
            "a: b",
            "#x",
            "a #b",
            "@x",
            "`x",
            "%x",
            "*x",
            "&x",
            "!x",
            "|",
            ">",
            "[",
            "{",
            "?",
            "=",
            "<<",
            " lead",
            "trail ",
            "it's",
            "say \"hi\"",
            "back\\slash",
            "tab\tin",
            "new\nline",
            "\u{85}",
            "\u{7f}",
            "\u{2028}",
            "é",
            "localhost,127.0.0.1,::1",
            "1",
            "300",
            "1.5",
            "0",
            "a:",
            "-1",
            "-.5",
            "--",
            "-a:b",
            "::1",
        ] {
            let y = scalar(quoted);
            assert_ne!(y, quoted, "{quoted:?} must be quoted");
            let back: BTreeMap<String, String> =
                serde_yaml::from_str(&format!("k: {y}\n")).unwrap();
            assert_eq!(back["k"], quoted, "{y}");
        }
    }

    #[test]
    fn yaml_layout() {
        let v = serde_json::json!({"b": [{"x": 1, "y": [true, {"z": "on"}]}, "s", [], {}], "a": {}, "c": null});
        let mut out = String::new();
        write_map(v.as_object().unwrap(), 0, &mut out);
        assert_eq!(
            out,
            "a: {}\nb:\n- x: 1\n  'y':\n  - true\n  - z: 'on'\n- s\n- []\n- {}\nc: null\n"
        );
        let back: serde_json::Value = serde_yaml::from_str(&out).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn documents_read_back_as_the_same_values() {
        let values = [
            serde_json::json!({"kind": "Pod", "metadata": {"name": "on"}}),
            serde_json::json!([{"reason": "BackOff", "count": 2}, {"reason": "yes"}]),
            serde_json::json!([]),
            serde_json::json!({}),
            serde_json::json!("2026-01-01T00:05:00Z"),
            serde_json::json!(null),
        ];
        for v in &values {
            let text = document(v).unwrap();
            let back: Value = serde_yaml::from_str(&text).unwrap();
            assert_eq!(&back, v, "{text}");
        }
        let stream = documents(&values).unwrap();
        let back: Vec<Value> = serde_yaml::Deserializer::from_str(&stream)
            .map(|d| Value::deserialize(d).unwrap())
            .collect();
        assert_eq!(back, values);
        assert_eq!(
            document(&values[1]).unwrap(),
            "- count: 2\n  reason: BackOff\n- reason: 'yes'\n"
        );
    }
}
