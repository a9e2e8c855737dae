//! Kubernetes' grammar for the names a plan and the flags give: DNS-1123 labels (a namespace, an Instance, a
//! placement) and image references (the probe's, the Custodian's), checked before anything is created.

use super::error::{PlanError, invalid};
use super::field::Field;

/// A namespace (`plan.namespace`, `--namespace`) is a DNS-1123 label; `field` names where it came from.
pub fn check_namespace(field: Field, value: &str) -> Result<(), PlanError> {
    dns_label(field, value)
}

/// An image reference (`plan.probeImage`, `--probe-image`, the Custodian's image) as a container runtime parses it
/// (distribution's reference grammar): `[host[:port]/]path[:tag][@algorithm:hex]`, the path's components lower-case
/// letters and digits joined by `.`, `_`, `__` or dashes, the tag at most 128 of `[A-Za-z0-9_.-]` (not starting with
/// `.` or `-`), the name at most 255 characters. The API server takes any string, and the kubelet refuses a bad one
/// only once the pod is scheduled (`InvalidImageName`), so it is refused here, before anything is created.
pub fn image_reference(field: Field, value: &str) -> Result<(), PlanError> {
    match image_reference_problem(value) {
        None => Ok(()),
        Some(why) => Err(invalid(
            field,
            format!(
                "\"{}\" is not an image reference ({why})",
                jr2_probe::sanitize::escape_truncate(value, 200)
            ),
        )),
    }
}

fn image_reference_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("empty");
    }
    let (rest, digest) = match value.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (value, None),
    };
    if let Some(digest) = digest {
        let Some((algorithm, hex)) = digest.split_once(':') else {
            return Some("a digest is <algorithm>:<hex>");
        };
        let algorithm_ok = !algorithm.is_empty()
            && algorithm.split(['+', '.', '_', '-']).all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        if !algorithm_ok || hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some("a digest is <algorithm>:<at least 32 hex digits>");
        }
    }
    // A tag follows the last ':' after the last '/' (a ':' before it is the registry's port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && !tag.starts_with(['.', '-'])
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Some(
                "a tag is 1 to 128 of letters, digits, '_', '.', '-', not starting with '.' or '-'",
            );
        }
    }
    if name.is_empty() {
        return Some("no name");
    }
    if name.len() > 255 {
        return Some("the name is longer than 255 characters");
    }
    let mut components: Vec<&str> = name.split('/').collect();
    // The first component is a registry when it looks like a host: a '.', a ':' or `localhost` (as Docker reads it).
    if components.len() > 1 {
        let first = components[0];
        if first.contains(['.', ':']) || first == "localhost" {
            if !is_registry(first) {
                return Some("the registry is <host>[:<port>]");
            }
            components.remove(0);
        }
    }
    if !components.iter().all(|c| is_path_component(c)) {
        return Some(
            "the path's components are lower-case letters and digits joined by '.', '_', '__' or '-'",
        );
    }
    None
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`: runs of lower-case letters and digits, one separator between two runs.
fn is_path_component(c: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = c.as_bytes();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &c[start..i];
        if !(matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-')) {
            return false;
        }
    }
    true
}

/// `host[:port]` of a registry: DNS labels (letters, digits, inner '-') joined by '.', or `[IPv6]`, and a port.
fn is_registry(text: &str) -> bool {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            p => match p.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = host.is_empty() && text.starts_with('[')
        || !host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
    port_ok && host_ok
}

/// A DNS-1123 label: what Kubernetes takes as a namespace or a pod's name, and each dot-separated part of a Secret's.
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

pub(super) fn dns_label(field: Field, value: &str) -> Result<(), PlanError> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "\"{}\" is not a DNS-1123 label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)",
                jr2_probe::sanitize::escape_truncate(value, 100)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let f = || Field::Flag("f");
        assert!(dns_label(f(), "a-1").is_ok());
        assert!(dns_label(f(), "A").is_err());
        assert!(dns_label(f(), "-a").is_err());
        assert!(dns_label(f(), &"a".repeat(64)).is_err());
    }
}
