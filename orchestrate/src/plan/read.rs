//! Reading a plan: its text (a file, stdin, the leading value of stdin), strict JSON (a key given twice is refused),
//! and, when the JSON is not a plan, the field that is not, named as validation names one.
//!
//! `serde_path_to_error` deserializes the whole plan and gives the path of the first field that fails; the path
//! becomes a [`Field`] and the error is worded by the kind of field: an object that is not one, a field missing or
//! unknown (with the fields the type has, as serde knows them: no table here repeats them), the API kind, source
//! and tool choice in pi's words, anything else as serde says it (`invalid type: string "300", expected u64`).

use std::path::Path;

use jr2_probe::api::ApiKind;
use jr2_probe::spec::input::InputError;
use serde::Deserialize;
use serde_json::Value;
use serde_path_to_error::Segment;

use super::{
    Field, MAX_PLAN_BYTES, ModelField, NetworkPolicyCheck, NetworkPolicyField, PLAN_SCHEMA,
    Placement, PlacementField, PlanError, PlanModel, RawPlan, SpecPath, Step, TopField, invalid,
};

impl RawPlan {
    /// Reads a plan from a file, or stdin for `-` (at most [`MAX_PLAN_BYTES`]). A pipe or a process substitution
    /// (`--plan <(jr2 plan)`) is read like a file.
    pub fn read(path: &Path) -> Result<RawPlan, PlanError> {
        let text = jr2_probe::spec::input::read_text(path)?;
        RawPlan::parse(&text)
    }

    /// Reads one plan from the start of `input` (stdin under `--cancel-on-stdin`), and not a byte past it: the end of
    /// its JSON value ends the plan, not the end of the input, which the caller keeps open to cancel the run. The same
    /// limit and the same errors as [`RawPlan::read`] (a plan cut short reads as the JSON error it is).
    pub fn read_leading(mut input: impl std::io::BufRead) -> Result<RawPlan, PlanError> {
        let io = |source| InputError::Io {
            path: "-".into(),
            source,
        };
        if input.fill_buf().map_err(io)?.starts_with(b"\xEF\xBB\xBF") {
            input.consume(3);
        }
        let mut seen = Recorded {
            inner: std::io::Read::take(&mut input, MAX_PLAN_BYTES + 1),
            bytes: Vec::new(),
        };
        // Only to find where the value ends; `RawPlan::parse` then reads it with the strict rules.
        let whole = serde::de::IgnoredAny::deserialize(&mut serde_json::Deserializer::from_reader(
            &mut seen,
        ));
        let bytes = seen.bytes;
        if bytes.len() as u64 > MAX_PLAN_BYTES {
            return Err(InputError::TooLarge {
                path: "-".into(),
                limit: "1 MiB",
            }
            .into());
        }
        if let Err(e) = &whole
            && e.is_io()
        {
            return Err(io(std::io::Error::other(e.to_string())).into());
        }
        let text = String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
            path: "-".into(),
            at: e.utf8_error().valid_up_to(),
        })?;
        RawPlan::parse(&text)
    }

    /// Parses a plan. A leading UTF-8 byte order mark (what some Windows editors write) is skipped; a
    /// key given twice in one object is refused (serde_json would keep the last one: a second `namespace` could
    /// point the run elsewhere than the first one a reader sees).
    pub fn parse(text: &str) -> Result<RawPlan, PlanError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value = strict_json::parse(text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => PlanError::Repeated(e.to_string()),
            _ => PlanError::Json(e.to_string()),
        })?;
        RawPlan::from_value(value)
    }

    /// Reads a plan already parsed as JSON: its schema, then its types.
    pub fn from_value(value: Value) -> Result<RawPlan, PlanError> {
        check_schema(&value)?;
        let mut plan: RawPlan =
            serde_path_to_error::deserialize(&value).map_err(|e| locate(&value, e))?;
        plan.unknown_fields = super::unknown_pod_spec_fields(&value);
        Ok(plan)
    }
}

fn check_schema(value: &Value) -> Result<(), PlanError> {
    let Some(top) = value.as_object() else {
        return Err(invalid(Field::Plan, "must be a JSON object"));
    };
    match top.get("schema") {
        None => Err(invalid(
            Field::top(TopField::Schema),
            format!("missing; this driver reads \"{PLAN_SCHEMA}\""),
        )),
        Some(Value::String(s)) if s == PLAN_SCHEMA => Ok(()),
        Some(other) => Err(schema_error(other)),
    }
}

/// A plan of another schema: what it says, and what this driver reads.
pub(super) fn schema_error(found: &Value) -> PlanError {
    let shown = jr2_probe::sanitize::escape_truncate(&found.to_string(), 100);
    invalid(
        Field::top(TopField::Schema),
        format!("{shown} is not a plan this driver reads (it reads \"{PLAN_SCHEMA}\")"),
    )
}

// --- Naming the field of a serde error -----------------------------------------------------------------------------

/// The error of a plan that does not deserialize: its field, typed, and the words for what is wrong there.
fn locate(value: &Value, e: serde_path_to_error::Error<serde_json::Error>) -> PlanError {
    let segments: Vec<&Segment> = e.path().iter().collect();
    let field = field_of(&segments);
    let inner = e.into_inner();
    let message = match &field {
        Field::Unknown { parent, .. } => format!(
            "unknown field (the fields here: {})",
            fields_of(parent).join(", ")
        ),
        Field::Plan | Field::Placement(_, None) | Field::Model(_, None) => {
            return object_error(value, field, &inner);
        }
        Field::Top(TopField::NetworkPolicyCheck) => return object_error(value, field, &inner),
        Field::Model(
            i,
            Some(key @ (ModelField::Api | ModelField::Source | ModelField::ToolChoice)),
        ) => {
            let found = &value["models"][*i][key.key()];
            match key {
                ModelField::Api => api_kind(found),
                ModelField::Source => source(found),
                _ => tool_choice(found),
            }
        }
        _ => inner.to_string(),
    };
    invalid(field, message)
}

/// The field a serde path leads to, as deep as a [`Field`] names one: every field under a pod spec, the fields of
/// the plan's own objects (what is under one of those, `harnessPodLabels.sandbox.app`, is named by that field).
fn field_of(path: &[&Segment]) -> Field {
    let key = |s: &Segment| match s {
        Segment::Map { key } => Some(key.clone()),
        Segment::Enum { variant } => Some(variant.clone()),
        Segment::Seq { .. } | Segment::Unknown => None,
    };
    let unknown = |parent: Field, key: String| Field::Unknown {
        parent: Box::new(parent),
        key,
    };
    let Some((first, rest)) = path.split_first() else {
        return Field::Plan;
    };
    let Some(name) = key(first) else {
        return Field::Plan;
    };
    let Some(top) = TopField::of(&name) else {
        return unknown(Field::Plan, name);
    };
    match (top, rest) {
        (TopField::Placements, [Segment::Seq { index }, rest @ ..]) => {
            let Some((first, rest)) = rest.split_first() else {
                return Field::Placement(*index, None);
            };
            match key(first) {
                Some(name) if name == "podSpec" => Field::PodSpec(*index, spec_path(rest)),
                Some(name) => match PlacementField::of(&name) {
                    Some(field) => Field::placement(*index, field),
                    None => unknown(Field::Placement(*index, None), name),
                },
                None => Field::Placement(*index, None),
            }
        }
        (TopField::Models, [Segment::Seq { index }, rest @ ..]) => {
            match rest.first().and_then(|s| key(s)) {
                Some(name) => match ModelField::of(&name) {
                    Some(field) => Field::model(*index, field),
                    None => unknown(Field::Model(*index, None), name),
                },
                None => Field::Model(*index, None),
            }
        }
        (TopField::NetworkPolicyCheck, [first, ..]) => match key(first) {
            Some(name) if name == "harnessPodLabels" => {
                Field::NetworkPolicy(NetworkPolicyField::HarnessPodLabels)
            }
            Some(name) => unknown(Field::top(TopField::NetworkPolicyCheck), name),
            None => Field::top(TopField::NetworkPolicyCheck),
        },
        (top, _) => Field::top(top),
    }
}

/// The path under a pod spec, as serde_path_to_error walked it.
fn spec_path(path: &[&Segment]) -> SpecPath {
    path.iter().fold(SpecPath::default(), |p, s| match s {
        Segment::Seq { index } => p.index(*index),
        Segment::Map { key } => p.key(key.as_str()),
        Segment::Enum { variant } => p.key(variant.as_str()),
        Segment::Unknown => p.then(Step::Key("?".to_owned())),
    })
}

/// The error at an object of the plan: not an object, or a field of it missing.
fn object_error(value: &Value, field: Field, e: &serde_json::Error) -> PlanError {
    let found = match &field {
        Field::Plan => Some(value),
        Field::Placement(i, None) => value["placements"].get(i),
        Field::Model(i, None) => value["models"].get(i),
        _ => value.get("networkPolicyCheck"),
    };
    let Some(object) = found.and_then(Value::as_object) else {
        let kind = found.map_or("null", kind_of);
        return invalid(field, format!("must be an object, not {kind}"));
    };
    // The field serde found missing: the one whose `missing_field` error is this error.
    let missing = fields_of(&field).iter().copied().find(|name| {
        !object.contains_key(*name)
            && <serde_json::Error as serde::de::Error>::missing_field(name).to_string()
                == e.to_string()
    });
    let Some(name) = missing else {
        return invalid(field, e.to_string());
    };
    let child = match field {
        Field::Placement(i, None) if name == "podSpec" => Field::PodSpec(i, SpecPath::default()),
        Field::Placement(i, None) => {
            PlacementField::of(name).map_or(field, |f| Field::placement(i, f))
        }
        Field::Model(i, None) => ModelField::of(name).map_or(field, |f| Field::model(i, f)),
        Field::Plan => TopField::of(name).map_or(Field::Plan, Field::top),
        other => Field::NetworkPolicy(match name {
            "harnessPodLabels" => NetworkPolicyField::HarnessPodLabels,
            _ => return invalid(other, e.to_string()),
        }),
    };
    invalid(child, "missing")
}

/// The fields of the object at `field`, as its type's `Deserialize` knows them.
fn fields_of(field: &Field) -> &'static [&'static str] {
    match field {
        Field::Placement(..) => serde_fields::<Placement>(),
        Field::Model(..) => serde_fields::<PlanModel>(),
        Field::Top(TopField::NetworkPolicyCheck) | Field::NetworkPolicy(_) => {
            serde_fields::<NetworkPolicyCheck>()
        }
        _ => serde_fields::<RawPlan>(),
    }
}

/// The field names `T`'s derived `Deserialize` takes, in the order of its fields: serde hands them to
/// `deserialize_struct`, and this deserializer hands them back as its error.
fn serde_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    use std::fmt;

    #[derive(Debug)]
    struct Fields(&'static [&'static str]);

    impl fmt::Display for Fields {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("the fields of a struct")
        }
    }

    impl std::error::Error for Fields {}

    impl serde::de::Error for Fields {
        fn custom<M: fmt::Display>(_: M) -> Self {
            Fields(&[])
        }
    }

    struct Introspect;

    impl<'de> serde::Deserializer<'de> for Introspect {
        type Error = Fields;

        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(&[]))
        }

        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }

    T::deserialize(Introspect).err().map_or(&[], |f| f.0)
}

fn api_kind(v: &Value) -> String {
    match v {
        Value::String(s) => format!(
            "unknown API kind \"{}\" (pi's kinds: {})",
            jr2_probe::sanitize::escape_truncate(s, 100),
            ApiKind::ALL.map(ApiKind::as_str).join(", ")
        ),
        other => format!("must be a string, not {}", kind_of(other)),
    }
}

fn source(v: &Value) -> String {
    match v {
        Value::String(s) => format!(
            "unknown source \"{}\" (one of: catalog, gateway, custom)",
            jr2_probe::sanitize::escape_truncate(s, 100)
        ),
        other => format!("must be a string, not {}", kind_of(other)),
    }
}

fn tool_choice(v: &Value) -> String {
    format!(
        "{} is not a tool choice (one of: unset, auto, none, required, named)",
        jr2_probe::sanitize::escape_truncate(&v.to_string(), 100)
    )
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A reader that keeps what was read through it.
struct Recorded<R> {
    inner: R,
    bytes: Vec<u8>,
}

impl<R: std::io::Read> std::io::Read for Recorded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// JSON read as [`Value`], except that a key given twice in one object is an error (serde_json keeps the last).
mod strict_json {
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::{Map, Value};

    /// Parses `text`; a repeated key is a data error: `key "namespace" given twice at line 4 column 15`.
    pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Strict.deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// A [`Value`] whose objects never repeat a key.
    struct Strict;

    impl<'de> DeserializeSeed<'de> for Strict {
        type Value = Value;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Strict {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }

        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(Value::from(v))
        }

        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(Value::from(v))
        }

        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
        }

        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }

        fn visit_string<E>(self, v: String) -> Result<Value, E> {
            Ok(Value::String(v))
        }

        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(Strict)? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut object = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if object.contains_key(&key) {
                    return Err(de::Error::custom(format_args!(
                        "key \"{}\" given twice",
                        jr2_probe::sanitize::escape_truncate(&key, 100)
                    )));
                }
                let value = map.next_value_seed(Strict)?;
                object.insert(key, value);
            }
            Ok(Value::Object(object))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Value {
        serde_json::from_str(include_str!("../../examples/plan.json")).unwrap()
    }

    #[test]
    fn a_leading_plan_is_read_up_to_its_end_and_not_past_it() {
        use std::io::{BufRead, Cursor};
        let text = format!(
            "\u{feff}{}\ncancel\n",
            include_str!("../../examples/plan.json").trim_end()
        );
        let mut input = Cursor::new(text.into_bytes());
        let plan = RawPlan::read_leading(&mut input).expect("the example, then a cancel line");
        assert_eq!(plan, RawPlan::from_value(example()).unwrap());
        let mut rest = String::new();
        while input.read_line(&mut rest).expect("a cursor") > 0 {}
        assert_eq!(rest, "\ncancel\n");
    }

    #[test]
    fn a_leading_plan_cut_short_or_too_long_is_refused_as_read_would() {
        let cut = r#"{"schema": "jr2.dev/provider-preflight-plan/v1", "namespace""#;
        let from_leading = RawPlan::read_leading(std::io::Cursor::new(cut)).unwrap_err();
        assert_eq!(
            from_leading.to_string(),
            RawPlan::parse(cut).unwrap_err().to_string()
        );
        assert!(
            matches!(from_leading, PlanError::Json(_)),
            "{from_leading:?}"
        );
        // A plan as long as the limit, of spaces before its value: refused without reading the rest.
        let long = " ".repeat(MAX_PLAN_BYTES as usize + 10) + "{}";
        let e = RawPlan::read_leading(std::io::Cursor::new(long)).unwrap_err();
        assert!(
            e.to_string().starts_with("--plan: - is larger than 1 MiB"),
            "{e}"
        );
        let e = RawPlan::read_leading(std::io::Cursor::new(b"{\"namespace\": \"\xff\"}".to_vec()))
            .unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn the_example_parses_and_round_trips() {
        let plan = RawPlan::from_value(example())
            .and_then(RawPlan::validate)
            .expect("the example is valid");
        let again = RawPlan::from_value(serde_json::to_value(&plan).unwrap())
            .and_then(RawPlan::validate)
            .unwrap();
        assert_eq!(plan, again);
        assert_eq!(plan.deadline_seconds, 300);
        assert_eq!(plan.timeout_seconds, 120);
    }

    #[test]
    fn errors_name_their_field() {
        let e = RawPlan::parse("[1]").unwrap_err();
        assert_eq!(e.to_string(), "plan: must be a JSON object");
        let e = RawPlan::parse("{").unwrap_err();
        assert!(matches!(e, PlanError::Json(_)), "{e}");
        let mut v = example();
        v["models"][1]["api"] = Value::from("openai-chat");
        let e = RawPlan::from_value(v).unwrap_err();
        assert_eq!(
            e.field().map(ToString::to_string).as_deref(),
            Some("plan.models[1].api")
        );
    }

    /// The keys a [`Field`] names are the fields serde knows of each type: no list repeats a type's fields by hand
    /// where it could drift.
    #[test]
    fn the_keys_of_each_object_are_its_types_fields() {
        let keys = |all: &[&'static str]| all.to_vec();
        assert_eq!(
            keys(serde_fields::<RawPlan>()),
            TopField::ALL.iter().map(|k| k.key()).collect::<Vec<_>>()
        );
        assert_eq!(
            keys(serde_fields::<PlanModel>()),
            ModelField::ALL.iter().map(|k| k.key()).collect::<Vec<_>>()
        );
        let mut placement: Vec<&str> = PlacementField::ALL.iter().map(|k| k.key()).collect();
        placement.insert(1, "podSpec");
        assert_eq!(keys(serde_fields::<Placement>()), placement);
        assert_eq!(
            keys(serde_fields::<NetworkPolicyCheck>()),
            ["harnessPodLabels"]
        );
    }

    /// The hand-written tables this reader replaced had no `waitingNoteSeconds`: a plan that set it and had a type
    /// error elsewhere was refused for an "unknown field" it has. Now the error names the field that is wrong.
    #[test]
    fn a_type_error_beside_waiting_note_seconds_names_its_own_field() {
        let mut v = example();
        v["waitingNoteSeconds"] = Value::from(10);
        v["deadlineSeconds"] = Value::from("300");
        let e = RawPlan::from_value(v).unwrap_err();
        assert_eq!(
            e.to_string(),
            "plan.deadlineSeconds: invalid type: string \"300\", expected u64"
        );
    }

    /// The field under a pod spec, and the object that is not one.
    #[test]
    fn inner_fields_and_objects_are_named() {
        let mut v = example();
        v["placements"][0]["podSpec"]["containers"][0]["ports"] =
            serde_json::json!([{"containerPort": "80"}]);
        let e = RawPlan::from_value(v).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "plan.placements[0].podSpec.containers[0].ports[0].containerPort: invalid type"
            ),
            "{e}"
        );
        let mut v = example();
        v["models"][2] = Value::from(3);
        assert_eq!(
            RawPlan::from_value(v).unwrap_err().to_string(),
            "plan.models[2]: must be an object, not a number"
        );
        let mut v = example();
        v["networkPolicyCheck"] = serde_json::json!({});
        assert_eq!(
            RawPlan::from_value(v).unwrap_err().to_string(),
            "plan.networkPolicyCheck.harnessPodLabels: missing"
        );
    }
}
