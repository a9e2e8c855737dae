//! The cluster as the run finds it before creating anything: the client, what it may do (the reviews of
//! `access.rs`, the lines of what it may not), and with `--from-deployment` the placements' pod spec taken from the
//! Deployment and validated again, as a plan is.

use jr2_probe::contract::{Exit, render};

use crate::access::{self, Access};
use crate::plan::{Overrides, ValidPlan};
use crate::{one_off, pull_secrets, workload};

use super::lines::{Lines, shown};
use super::settings::{Session, valid_plan};

/// The cluster as the run found it before creating anything.
pub(super) struct Connected {
    pub(super) client: kube::Client,
    pub(super) access: Access,
    /// When the check pods' deadline comes (set once their deadline is written): `RunConfig::pod_deadline`.
    pub(super) pod_deadline: Option<tokio::time::Instant>,
}

/// Why no cluster was found to run in.
pub(super) enum NotConnected {
    /// The exit, its line written.
    Exit(Exit),
    /// The kubeconfig's credentials could not be used (issue 40, item 5): a failure of the run, with its verdict
    /// and evidence like any other, its lines not written yet; why, in `credentials.rs`'s words.
    Credentials(String),
}

/// The client, what it may do (the warnings of what it may not, written), and with `--from-deployment` the
/// placements' pod spec from the Deployment.
pub(super) async fn connect(
    session: &Session<'_>,
    plan: &mut ValidPlan,
    lines: &mut Lines,
) -> Result<Connected, NotConnected> {
    let client = match crate::cluster::client(
        session.kubeconfig,
        session.context.map(str::to_owned),
    )
    .await
    {
        Ok(c) => c,
        Err(crate::cluster::ClusterError::Credentials(why)) => {
            return Err(NotConnected::Credentials(why));
        }
        Err(e) => {
            jr2_probe::say!("{}", render::cannot_reach_cluster(&shown(&e.to_string())));
            return Err(NotConnected::Exit(Exit::Failed));
        }
    };
    let needs = access::Needs {
        deployment: session.from_deployment.is_some(),
        network_policies: plan.network_policy_check.is_some() || session.from_deployment.is_some(),
        service_accounts: session.from_deployment.is_some() || pull_secrets::reads_accounts(plan),
    };
    let access = access::review(client.clone(), &plan.namespace, &needs).await;
    if !access.missing.is_empty() {
        return Ok(Connected {
            client,
            access,
            pod_deadline: None,
        });
    }
    if let Some(name) = session.from_deployment {
        let applied = match workload::read_deployment(client.clone(), &plan.namespace, name).await {
            Ok(w) => adopt(session, plan.clone(), &w),
            Err(e) => Err(e),
        };
        match applied {
            Ok(adopted) => *plan = adopted,
            Err(e) => {
                jr2_probe::say!("error: --from-deployment: {}", shown(&e.to_string()));
                return Err(NotConnected::Exit(workload::WorkloadError::EXIT));
            }
        }
    }
    // What the run lacks, said once the plan is whole: a Deployment's template may name no ServiceAccount, or give
    // no labels to compare policies with, and then nothing is lacking.
    let mut access = access;
    access.lacking.retain(|p| match p.used_for {
        access::Use::ServiceAccounts => pull_secrets::reads_accounts(plan),
        access::Use::NetworkPolicies => plan.network_policy_check.is_some(),
        _ => true,
    });
    for line in access::lacking_lines(&access, &plan.namespace) {
        lines.emit(line);
    }
    if !access.denied(access::Use::ServiceAccounts) {
        pull_secrets::adopt(client.clone(), plan).await;
    }
    Ok(Connected {
        client,
        access,
        pod_deadline: None,
    })
}

/// `--from-deployment`: the Deployment's template in the plan (and for `check`, its containers and the keys they
/// hold), which is then validated again, as a plan is: a template is new input. Its errors are named as the
/// Deployment names its fields.
fn adopt(
    session: &Session<'_>,
    plan: ValidPlan,
    w: &workload::HarnessWorkload,
) -> Result<ValidPlan, workload::WorkloadError> {
    let mut plan = plan.into_raw();
    if session.one_off {
        one_off::adopt(&mut plan, w)?;
    } else {
        workload::apply(&mut plan, w);
    }
    valid_plan(plan, &Overrides::default()).map_err(|e| workload::invalid(w, e))
}
