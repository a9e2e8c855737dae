//! The fake API server's authorizer: what the test denies, answered as the real one does.
//!
//! A test denies permissions ([`super::FakeKube::deny`]: verb, API group, resource with its subresource, as RBAC names
//! them). Then a request that needs one is answered `403 Forbidden` with the API server's message (`pods is
//! forbidden: User "fake" cannot create resource "pods" in API group "" in the namespace "e2e"`), and a
//! SelfSubjectAccessReview of it says `allowed: false` with no reason (RBAC denies by saying nothing). Everything
//! else is allowed, SelfSubjectAccessReviews themselves included (every authenticated user may make them).
//!
//! This is the fake's own reading of a request's verb and resource (the API server's `RequestInfo`): a watch is
//! `watch`, a `GET` without a name `list`, and `GET /api/v1/namespaces/<ns>` is `get` on `namespaces` in `<ns>`.

use serde_json::{Value, json};

/// One permission as RBAC names it: verb, API group (`""` for core), resource (`pods/log` with its subresource).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    /// `create`, `list`, `watch`, `get`, `delete`...
    pub verb: String,
    /// The API group: `""` for core.
    pub group: String,
    /// The resource, with its subresource: `pods`, `pods/log`.
    pub resource: String,
}

impl Rule {
    /// A rule from its three names.
    pub fn new(verb: &str, group: &str, resource: &str) -> Self {
        Rule {
            verb: verb.to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// What a request asks, as the API server's authorizer reads it: its rule and namespace (`""` at the cluster scope).
/// `None` for what is no resource request (discovery, `/version`).
pub fn attributes(method: &str, path: &str, watch: bool) -> Option<(Rule, String)> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", group, _v, rest @ ..] if !rest.is_empty() => (*group, rest),
        _ => return None,
    };
    let (ns, resource, named, sub) = match rest {
        ["namespaces", ns] => (*ns, "namespaces", true, None),
        ["namespaces", ns, resource, tail @ ..] => {
            (*ns, *resource, !tail.is_empty(), tail.get(1).copied())
        }
        [resource, tail @ ..] => ("", *resource, !tail.is_empty(), tail.get(1).copied()),
        [] => return None,
    };
    let verb = match (method, named) {
        _ if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        _ => return None,
    };
    let resource = match sub {
        Some(sub) => format!("{resource}/{sub}"),
        None => resource.to_owned(),
    };
    Some((Rule::new(verb, group, &resource), ns.to_owned()))
}

/// The API server's 403 message for a denied request.
pub(super) fn forbidden_message(rule: &Rule, ns: &str) -> String {
    let (resource, sub) = match rule.resource.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (rule.resource.as_str(), None),
    };
    let qualified = if rule.group.is_empty() {
        rule.resource.clone()
    } else {
        format!(
            "{resource}.{}{}",
            rule.group,
            sub.map(|s| format!("/{s}")).unwrap_or_default()
        )
    };
    let sub_part = sub
        .map(|s| format!(" subresource \"{s}\""))
        .unwrap_or_default();
    let scope = if ns.is_empty() {
        " at the cluster scope".to_owned()
    } else {
        format!(" in the namespace \"{ns}\"")
    };
    format!(
        "{qualified} is forbidden: User \"fake\" cannot {verb} resource \"{resource}\"{sub_part} in API group \"{group}\"{scope}",
        verb = rule.verb,
        group = rule.group,
    )
}

/// The answer to a SelfSubjectAccessReview `body` given the denied rules: the review with its status.
pub(super) fn review(body: &Value, denied: &[Rule]) -> Value {
    let attrs = &body["spec"]["resourceAttributes"];
    let s = |k: &str| attrs[k].as_str().unwrap_or_default().to_owned();
    let resource = match attrs["subresource"].as_str().filter(|s| !s.is_empty()) {
        Some(sub) => format!("{}/{sub}", s("resource")),
        None => s("resource"),
    };
    let rule = Rule::new(&s("verb"), &s("group"), &resource);
    let allowed = !denied.contains(&rule);
    let mut answer = body.clone();
    answer["apiVersion"] = json!("authorization.k8s.io/v1");
    answer["kind"] = json!("SelfSubjectAccessReview");
    answer["metadata"] = json!({"creationTimestamp": null});
    answer["status"] = if allowed {
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"jr2-preflight/e2e\" of Role \"jr2-preflight\" to User \"fake\""})
    } else {
        json!({"allowed": false})
    };
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_the_authorizer_reads_them() {
        let of = |m: &str, path: &str, w: bool| {
            attributes(m, path, w)
                .map(|(r, ns)| format!("{} {}/{} in {ns}", r.verb, r.group, r.resource))
        };
        let cases = [
            (
                "POST",
                "/api/v1/namespaces/a/pods",
                false,
                Some("create /pods in a"),
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods",
                false,
                Some("list /pods in a"),
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods",
                true,
                Some("watch /pods in a"),
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/pods/p",
                false,
                Some("delete /pods in a"),
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods/p/log",
                false,
                Some("get /pods/log in a"),
            ),
            (
                "GET",
                "/api/v1/namespaces/a",
                false,
                Some("get /namespaces in a"),
            ),
            (
                "GET",
                "/apis/apps/v1/namespaces/a/deployments/d",
                false,
                Some("get apps/deployments in a"),
            ),
            (
                "POST",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                false,
                Some("create authorization.k8s.io/selfsubjectaccessreviews in "),
            ),
            ("GET", "/version", false, None),
            ("GET", "/apis", false, None),
            ("GET", "/api/v1", false, None),
        ];
        for (m, path, w, want) in cases {
            assert_eq!(of(m, path, w).as_deref(), want, "{m} {path}");
        }
        let rule = Rule::new("list", "", "events");
        assert_eq!(
            forbidden_message(&rule, "e2e"),
            "events is forbidden: User \"fake\" cannot list resource \"events\" in API group \"\" in the namespace \"e2e\""
        );
        let rule = Rule::new("get", "", "pods/log");
        assert_eq!(
            forbidden_message(&rule, "e2e"),
            "pods/log is forbidden: User \"fake\" cannot get resource \"pods\" subresource \"log\" in API group \"\" in the namespace \"e2e\""
        );
    }
}
