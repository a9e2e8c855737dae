//! What the probe container asks (requests and limits), fitted to the namespace's LimitRanges and ResourceQuotas, so
//! that the admission that admits a Harness pod admits the check pod too (issue 35, item 1).
//!
//! The probe always states requests **and** limits for cpu and memory: a ResourceQuota on any of `requests.cpu`,
//! `limits.cpu`, `requests.memory`, `limits.memory` (or `cpu`, `memory`) refuses a container that does not. A quota
//! on `requests.ephemeral-storage` or `limits.ephemeral-storage`, or a LimitRange that bounds it, makes it state
//! ephemeral storage too. It starts from small asks ([`BASE`]) and follows the LimitRanges of type `Container`, as the
//! LimitRanger admission weighs a container (every LimitRange of the namespace applies; the tightest bound wins):
//!
//! - `min`: a request and a limit below it are raised to it;
//! - `maxLimitRequestRatio`: a cpu limit is lowered to `request × ratio` (throttled a little more, never refused); a
//!   memory or storage request is raised to `limit ÷ ratio` (a lower memory limit could kill the probe);
//! - `max`: a limit (and a request) above it is lowered to it;
//! - `default`, `defaultRequest`: never applied to the probe, which states every value; they apply to the Custodian
//!   as to the Harness pod's Custodian (its resources are the Harness spec's, copied).
//!
//! Then the LimitRanges of type `Pod` (the sum over the pod's containers, the Custodian's as the LimitRanger
//! defaults them): the probe's share is raised to meet a pod `min` and lowered (not below its own floor) to meet a
//! pod `max`.
//!
//! Without the LimitRanges (`list limitranges` not allowed, or no answer), the probe asks [`UNREAD`]: requests equal
//! to limits (so any `maxLimitRequestRatio` passes), above the floors namespaces commonly set.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, LimitRange, ResourceQuota, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::quantity;

/// A resource the probe states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// `cpu`.
    Cpu,
    /// `memory`.
    Memory,
    /// `ephemeral-storage`: stated only where the namespace asks for it.
    EphemeralStorage,
}

impl Resource {
    /// The name Kubernetes gives it.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
            Resource::EphemeralStorage => "ephemeral-storage",
        }
    }

    fn write(self, milli: u128) -> Quantity {
        Quantity(match self {
            Resource::Cpu => quantity::cpu(milli),
            Resource::Memory | Resource::EphemeralStorage => quantity::bytes(milli),
        })
    }

    const ALL: [Resource; 3] = [Resource::Cpu, Resource::Memory, Resource::EphemeralStorage];
}

/// A request and a limit, in milli-units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ask {
    /// The request.
    pub request: u128,
    /// The limit.
    pub limit: u128,
}

/// What the probe container asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asks(pub BTreeMap<Resource, Ask>);

const MI: u128 = 1024 * 1024 * 1000;

/// The probe's own asks: it holds a few TLS connections and one small response per model.
pub fn base() -> Asks {
    Asks(BTreeMap::from([
        (
            Resource::Cpu,
            Ask {
                request: 10,
                limit: 100,
            },
        ),
        (
            Resource::Memory,
            Ask {
                request: 32 * MI,
                limit: 64 * MI,
            },
        ),
    ]))
}

/// Ephemeral storage, where the namespace asks for it: the probe writes only its log and its termination message.
const STORAGE: Ask = Ask {
    request: 16 * MI,
    limit: 64 * MI,
};

/// The asks when the LimitRanges could not be read: requests equal to limits, above common floors (`50m`, `64Mi`).
pub fn unread() -> Asks {
    Asks(BTreeMap::from([
        (
            Resource::Cpu,
            Ask {
                request: 100,
                limit: 100,
            },
        ),
        (
            Resource::Memory,
            Ask {
                request: 128 * MI,
                limit: 128 * MI,
            },
        ),
    ]))
}

impl Asks {
    /// As a container's `resources`.
    pub fn requirements(&self) -> ResourceRequirements {
        let map = |f: fn(&Ask) -> u128| {
            self.0
                .iter()
                .map(|(r, a)| (r.name().to_owned(), r.write(f(a))))
                .collect::<BTreeMap<_, _>>()
        };
        ResourceRequirements {
            requests: Some(map(|a| a.request)),
            limits: Some(map(|a| a.limit)),
            claims: None,
        }
    }
}

/// The bounds of one LimitRange type (`Container` or `Pod`) over every LimitRange of the namespace: the tightest.
#[derive(Clone, Debug, Default)]
struct Bounds {
    min: BTreeMap<Resource, u128>,
    max: BTreeMap<Resource, u128>,
    ratio: BTreeMap<Resource, u128>,
    default_limit: BTreeMap<Resource, u128>,
    default_request: BTreeMap<Resource, u128>,
}

impl Bounds {
    fn of(ranges: &[LimitRange], kind: &str) -> Self {
        let mut b = Bounds::default();
        let items = ranges
            .iter()
            .filter_map(|r| r.spec.as_ref())
            .flat_map(|s| &s.limits)
            .filter(|i| i.type_ == kind);
        for item in items {
            let read = |m: &Option<BTreeMap<String, Quantity>>, r: Resource| {
                m.as_ref()?
                    .get(r.name())
                    .and_then(|q| quantity::milli(&q.0))
            };
            for r in Resource::ALL {
                if let Some(v) = read(&item.min, r) {
                    let e = b.min.entry(r).or_insert(v);
                    *e = (*e).max(v);
                }
                if let Some(v) = read(&item.max, r) {
                    let e = b.max.entry(r).or_insert(v);
                    *e = (*e).min(v);
                }
                // A ratio is a plain number: 10 reads as 10,000 milli-units.
                if let Some(v) = read(&item.max_limit_request_ratio, r) {
                    let e = b.ratio.entry(r).or_insert(v);
                    *e = (*e).min(v);
                }
                if let Some(v) = read(&item.default, r) {
                    b.default_limit.entry(r).or_insert(v);
                }
                if let Some(v) = read(&item.default_request, r) {
                    b.default_request.entry(r).or_insert(v);
                }
            }
        }
        b
    }

    fn names(&self, r: Resource) -> bool {
        self.min.contains_key(&r) || self.max.contains_key(&r) || self.ratio.contains_key(&r)
    }
}

/// The probe's asks in a namespace with these LimitRanges and ResourceQuotas, beside this Custodian (the pod-level
/// bounds count it). `None` for the LimitRanges: they could not be read ([`unread`]).
pub fn fit(
    ranges: Option<&[LimitRange]>,
    quotas: &[ResourceQuota],
    custodian: Option<&Container>,
) -> Asks {
    let Some(ranges) = ranges else {
        return unread();
    };
    let mut asks = base();
    let container = Bounds::of(ranges, "Container");
    let pod = Bounds::of(ranges, "Pod");
    let storage_quota = quotas
        .iter()
        .filter_map(|q| q.spec.as_ref()?.hard.as_ref())
        .flat_map(|h| h.keys())
        .any(|k| k == "requests.ephemeral-storage" || k == "limits.ephemeral-storage");
    if storage_quota
        || container.names(Resource::EphemeralStorage)
        || pod.names(Resource::EphemeralStorage)
    {
        asks.0.insert(Resource::EphemeralStorage, STORAGE);
    }
    for (&r, ask) in asks.0.iter_mut() {
        fit_container(r, ask, &container);
        let own_floor = *ask;
        let side = custodian_ask(custodian, r, &container);
        fit_pod(r, ask, &pod, side, &container, own_floor);
    }
    asks
}

/// One resource of the probe against the `Container` bounds.
fn fit_container(r: Resource, ask: &mut Ask, b: &Bounds) {
    if let Some(&min) = b.min.get(&r) {
        ask.request = ask.request.max(min);
        ask.limit = ask.limit.max(min);
    }
    if let Some(&ratio) = b.ratio.get(&r) {
        // limit / request <= ratio, the ratio in milli-units.
        match r {
            Resource::Cpu => {
                let most = ask.request.saturating_mul(ratio) / 1000;
                ask.limit = ask.limit.min(most.max(ask.request));
            }
            Resource::Memory | Resource::EphemeralStorage => {
                let least = ask.limit.saturating_mul(1000).div_ceil(ratio.max(1));
                ask.request = ask.request.max(least).min(ask.limit);
            }
        }
    }
    if let Some(&max) = b.max.get(&r) {
        ask.limit = ask.limit.min(max);
        ask.request = ask.request.min(ask.limit);
    }
}

/// The Custodian's request and limit of `r`, as the LimitRanger makes them: what its spec states, else the
/// namespace's defaults (a limit alone stands for the request too).
fn custodian_ask(custodian: Option<&Container>, r: Resource, b: &Bounds) -> Ask {
    let Some(c) = custodian else {
        return Ask {
            request: 0,
            limit: 0,
        };
    };
    let read = |m: Option<&BTreeMap<String, Quantity>>| {
        m?.get(r.name()).and_then(|q| quantity::milli(&q.0))
    };
    let res = c.resources.as_ref();
    let limit = read(res.and_then(|x| x.limits.as_ref())).or(b.default_limit.get(&r).copied());
    let request = read(res.and_then(|x| x.requests.as_ref()))
        .or(b.default_request.get(&r).copied())
        .or(limit);
    Ask {
        request: request.unwrap_or(0),
        limit: limit.unwrap_or(0),
    }
}

/// One resource of the probe against the `Pod` bounds, beside the Custodian's `side`; never below the `Container`
/// minimum, nor the probe's own request.
fn fit_pod(r: Resource, ask: &mut Ask, b: &Bounds, side: Ask, container: &Bounds, floor: Ask) {
    if let Some(&min) = b.min.get(&r) {
        ask.request = ask.request.max(min.saturating_sub(side.request));
        ask.limit = ask
            .limit
            .max(min.saturating_sub(side.limit))
            .max(ask.request);
    }
    if let Some(&max) = b.max.get(&r) {
        let least = container.min.get(&r).copied().unwrap_or(0);
        let room = max.saturating_sub(side.limit);
        ask.limit = ask
            .limit
            .min(room)
            .max(least)
            .max(floor.request.min(ask.limit));
        ask.request = ask.request.min(ask.limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(v: serde_json::Value) -> Vec<LimitRange> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|spec| serde_json::from_value(serde_json::json!({"spec": spec})).unwrap())
            .collect()
    }

    fn written(a: &Asks) -> String {
        let r = a.requirements();
        format!(
            "requests {:?} limits {:?}",
            r.requests
                .unwrap()
                .into_iter()
                .map(|(k, v)| format!("{k}={}", v.0))
                .collect::<Vec<_>>(),
            r.limits
                .unwrap()
                .into_iter()
                .map(|(k, v)| format!("{k}={}", v.0))
                .collect::<Vec<_>>()
        )
    }

    #[test]
    fn with_no_limit_range_the_probe_asks_little_and_states_everything() {
        assert_eq!(
            written(&fit(Some(&[]), &[], None)),
            r#"requests ["cpu=10m", "memory=32Mi"] limits ["cpu=100m", "memory=64Mi"]"#
        );
        assert_eq!(
            written(&fit(None, &[], None)),
            r#"requests ["cpu=100m", "memory=128Mi"] limits ["cpu=100m", "memory=128Mi"]"#
        );
    }

    #[test]
    fn a_floor_raises_the_asks_and_a_ceiling_lowers_them() {
        let lr = ranges(serde_json::json!([
            {"limits": [{"type": "Container", "min": {"cpu": "50m", "memory": "64Mi"}}]}
        ]));
        assert_eq!(
            written(&fit(Some(&lr), &[], None)),
            r#"requests ["cpu=50m", "memory=64Mi"] limits ["cpu=100m", "memory=64Mi"]"#
        );
        let lr = ranges(serde_json::json!([
            {"limits": [{"type": "Container", "max": {"cpu": "50m", "memory": "48Mi"}}]},
            {"limits": [{"type": "Container", "max": {"cpu": "80m"}}]}
        ]));
        assert_eq!(
            written(&fit(Some(&lr), &[], None)),
            r#"requests ["cpu=10m", "memory=32Mi"] limits ["cpu=50m", "memory=48Mi"]"#
        );
    }

    #[test]
    fn a_ratio_lowers_the_cpu_limit_and_raises_the_memory_request() {
        let lr = ranges(serde_json::json!([
            {"limits": [{"type": "Container", "maxLimitRequestRatio": {"cpu": "2", "memory": "1"}}]}
        ]));
        assert_eq!(
            written(&fit(Some(&lr), &[], None)),
            r#"requests ["cpu=10m", "memory=64Mi"] limits ["cpu=20m", "memory=64Mi"]"#
        );
        // A ratio of 1.5 on memory, with a floor.
        let lr = ranges(serde_json::json!([
            {"limits": [{"type": "Container", "min": {"memory": "40Mi"}, "maxLimitRequestRatio": {"memory": "1.5"}}]}
        ]));
        let a = fit(Some(&lr), &[], None);
        let m = a.0[&Resource::Memory];
        assert!(
            m.limit * 1000 <= m.request * 1500 && m.request >= 40 * MI,
            "{m:?}"
        );
    }

    #[test]
    fn a_quota_or_a_range_on_storage_makes_the_probe_state_it() {
        let quota: ResourceQuota = serde_json::from_value(serde_json::json!({
            "spec": {"hard": {"requests.ephemeral-storage": "1Gi", "limits.cpu": "2"}}
        }))
        .unwrap();
        assert_eq!(
            written(&fit(Some(&[]), &[quota], None)),
            r#"requests ["cpu=10m", "ephemeral-storage=16Mi", "memory=32Mi"] limits ["cpu=100m", "ephemeral-storage=64Mi", "memory=64Mi"]"#
        );
        let lr = ranges(serde_json::json!([
            {"limits": [{"type": "Container", "min": {"ephemeral-storage": "32Mi"}}]}
        ]));
        assert_eq!(
            fit(Some(&lr), &[], None).0[&Resource::EphemeralStorage],
            Ask {
                request: 32 * MI,
                limit: 64 * MI
            }
        );
    }

    #[test]
    fn pod_bounds_count_the_custodian_as_the_limit_ranger_defaults_it() {
        let custodian: Container = serde_json::from_value(serde_json::json!({
            "name": "custodian", "resources": {"requests": {"cpu": "10m"}, "limits": {"memory": "32Mi"}}
        }))
        .unwrap();
        let lr = ranges(serde_json::json!([
            {"limits": [
                {"type": "Pod", "min": {"cpu": "100m"}, "max": {"memory": "80Mi"}},
                {"type": "Container", "default": {"cpu": "200m"}}
            ]}
        ]));
        let a = fit(Some(&lr), &[], Some(&custodian));
        // cpu: the pod's requests reach 100m with the Custodian's 10m; its limit (200m by default) leaves the probe's.
        assert_eq!(
            a.0[&Resource::Cpu],
            Ask {
                request: 90,
                limit: 100
            }
        );
        // memory: the pod's limits stay under 80Mi with the Custodian's 32Mi: the probe's limit is 48Mi.
        assert_eq!(
            a.0[&Resource::Memory],
            Ask {
                request: 32 * MI,
                limit: 48 * MI
            }
        );
    }
}
