//! Label and field selectors as the API server parses and matches them (`a=b,c!=d,e in (f,g),!h`; a field selector
//! is a dotted path into the object), and the filter a list or watch applies: a kind, a namespace, both selectors.

use serde_json::Value;

use super::request::ApiRequest;
use super::store::Kind;

/// One requirement of a selector.
#[derive(Clone, Debug)]
enum Requirement {
    Eq(String, String),
    Ne(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A label or field selector.
#[derive(Clone, Debug, Default)]
pub(super) struct Selector(Vec<Requirement>);

impl Selector {
    /// Parses a selector; the API server's message when it cannot.
    pub(super) fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        let mut reqs = Vec::new();
        for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            let set = |op: &str| -> Option<(String, Vec<String>)> {
                let (k, rest) = part.split_once(op)?;
                let values = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
                Some((
                    k.trim().to_owned(),
                    values
                        .split(',')
                        .map(|v| v.trim().to_owned())
                        .filter(|v| !v.is_empty())
                        .collect(),
                ))
            };
            let req = if let Some((k, v)) = set(" notin ") {
                Requirement::NotIn(k, v)
            } else if let Some((k, v)) = set(" in ") {
                Requirement::In(k, v)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::Ne(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_owned())
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                Requirement::Exists(part.to_owned())
            } else {
                return Err(format!("unable to parse requirement: {part:?}"));
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    fn matches_with(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k).as_deref() == Some(v.as_str()),
            Requirement::Ne(k, v) => get(k).as_deref() != Some(v.as_str()),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
        })
    }

    /// Whether the object's labels match.
    pub(super) fn matches_labels(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.matches_with(|k| labels.get(k).and_then(Value::as_str).map(str::to_owned))
    }

    /// A field selector: a dotted path into the object; a missing field reads as `""`, as the API server's does.
    fn matches_fields(&self, object: &Value) -> bool {
        self.matches_with(|path| {
            let v = path
                .split('.')
                .try_fold(object, |v, seg| v.get(seg))
                .unwrap_or(&Value::Null);
            Some(match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
        })
    }
}

/// What a list or watch selects.
pub(super) struct Filter {
    pub(super) kind: Kind,
    ns: Option<String>,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    /// The filter of a list or watch of `kind` (in `ns`, or every namespace), from its query.
    pub(super) fn from_request(
        kind: Kind,
        ns: Option<&str>,
        req: &ApiRequest,
    ) -> Result<Self, String> {
        Ok(Self {
            kind,
            ns: ns.map(str::to_owned),
            labels: Selector::parse(req.q("labelSelector").unwrap_or(""))?,
            fields: Selector::parse(req.q("fieldSelector").unwrap_or(""))?,
        })
    }

    /// Whether an object of `kind` is selected.
    pub(super) fn matches(&self, kind: Kind, object: &Value) -> bool {
        kind == self.kind
            && self
                .ns
                .as_deref()
                .is_none_or(|ns| object["metadata"]["namespace"] == ns)
            && self.labels.matches_labels(object)
            && self.fields.matches_fields(object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn selectors() {
        let pod = json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"nodeName": "n"}});
        let m = |s: &str| Selector::parse(s).unwrap().matches_labels(&pod);
        assert!(m("a=1,b==2"));
        assert!(m("a,!c"));
        assert!(m("a in (1,3),b notin (3)"));
        assert!(!m("a!=1"));
        assert!(!m("c"));
        assert!(m(""));
        let f = |s: &str| Selector::parse(s).unwrap().matches_fields(&pod);
        assert!(f("metadata.name=p,spec.nodeName=n"));
        assert!(f("status.phase="));
        assert!(!f("metadata.name=q"));
    }
}
