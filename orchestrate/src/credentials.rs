//! Why the kubeconfig's credentials could not be used, in the driver's own words (issue 40, item 5).
//!
//! kube's auth errors carry what they met: `AuthExecRun`'s Display is the exec credential plugin's whole
//! `std::process::Output` (its stdout, where a token may already be, and its stderr, where plugins print the token
//! they failed to refresh), and `AuthExec`'s text can hold a command line. None of it may reach a line, the verdict or
//! the evidence, so the words here are built from the error's kind alone: what failed, an exit status, an I/O
//! error's kind, a token file's path. Nothing the plugin printed.

use std::error::Error as StdError;

use kube::client::AuthError;

/// An exec credential plugin runs with its stdin and stderr piped, not inherited (kube's `IfAvailable`, its
/// default, hands it the driver's own): what it prints on stderr would otherwise be a line of the driver's, which
/// `jr2 up` reads as one, token and all. `Always` (a plugin that must prompt) is left as the kubeconfig asks.
pub fn not_interactive(file: &mut kube::config::Kubeconfig) {
    for user in &mut file.auth_infos {
        if let Some(exec) = user.auth_info.as_mut().and_then(|a| a.exec.as_mut())
            && exec.interactive_mode != Some(kube::config::ExecInteractiveMode::Always)
        {
            exec.interactive_mode = Some(kube::config::ExecInteractiveMode::Never);
        }
    }
}

/// The auth error in `e`'s chain of sources, if any: a failure of the kubeconfig's credentials, not of the network.
pub fn auth_error<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a AuthError> {
    let mut cause: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(auth) = c.downcast_ref::<AuthError>() {
            return Some(auth);
        }
        cause = c.source();
    }
    None
}

/// What failed, said from the error's kind: never the plugin's output, never a token, never a command line.
pub fn words(e: &AuthError) -> String {
    match e {
        AuthError::AuthExecRun { out, .. } => format!(
            "the kubeconfig's exec credential plugin failed ({}); what it printed is not shown, as it can hold a \
             token",
            exit_words(&out.status)
        ),
        AuthError::AuthExecStart(io) => format!(
            "the kubeconfig's exec credential plugin could not be started ({})",
            io_words(io)
        ),
        AuthError::AuthExecParse(_) => {
            "the kubeconfig's exec credential plugin answered with something that is not an ExecCredential"
                .to_owned()
        }
        AuthError::ExecPluginFailed => {
            "the kubeconfig's exec credential plugin answered with no status (no token)".to_owned()
        }
        AuthError::MalformedTokenExpirationDate(_) => {
            "the kubeconfig's exec credential plugin answered with an expirationTimestamp that is not a date"
                .to_owned()
        }
        AuthError::ExecMissingClusterInfo => {
            "the kubeconfig's exec credential plugin asks for the cluster's info (provideClusterInfo), which the \
             kubeconfig does not give"
                .to_owned()
        }
        AuthError::MissingCommand => {
            "the kubeconfig's exec credential plugin names no command".to_owned()
        }
        AuthError::UnrefreshableTokenResponse => {
            "the kubeconfig's credentials could not be refreshed".to_owned()
        }
        AuthError::ReadTokenFile(io, path) => format!(
            "the kubeconfig's token file {} cannot be read ({})",
            jr2_probe::sanitize::escape_truncate(&path.display().to_string(), 200),
            io_words(io)
        ),
        AuthError::InvalidBasicAuth(_) => {
            "the kubeconfig's user name or password is not a valid header value".to_owned()
        }
        AuthError::InvalidBearerToken(_) => {
            "the kubeconfig's token is not a valid header value".to_owned()
        }
        // `AuthExec` (an auth provider, a command that failed: its text can hold the command line), `ParseTokenKey`,
        // the OAuth and OIDC errors, a root store that cannot be read.
        _ => "the kubeconfig's credentials cannot be used (its auth provider failed)".to_owned(),
    }
}

/// `exit status 3`, `killed by signal 9`: the status, as words of ours.
fn exit_words(status: &std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(status) {
        return format!("killed by signal {signal}");
    }
    "no exit status".to_owned()
}

/// An I/O error by its kind (`not found`, `permission denied`): its Display adds nothing but the OS's number.
fn io_words(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        kind => jr2_probe::sanitize::escape_truncate(&kind.to_string(), 80),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A plugin's output as kube keeps it: a token on stdout, another in the refresh error on stderr.
    fn failed_run() -> AuthError {
        let status = std::os::unix::process::ExitStatusExt::from_raw(3 << 8);
        AuthError::AuthExecRun {
            cmd: "\"/usr/local/bin/corp-login\" \"--token\" \"PW4242\"".to_owned(),
            out: Box::new(std::process::Output {
                status,
                stdout: b"{\"status\":{\"token\":\"eyJhbGciOiPW4242.eyJzdWIiOiPW4242.sigPW4242\"}}"
                    .to_vec(),
                stderr: b"refresh failed for token eyJhbGciOiPW4242".to_vec(),
            }),
        }
    }

    #[test]
    fn a_failed_plugin_is_named_by_its_status_and_nothing_it_printed() {
        let e = failed_run();
        // What kube itself would print: the whole output.
        assert!(e.to_string().contains("PW4242"));
        let said = words(&e);
        assert!(!said.contains("PW4242") && !said.contains("eyJ"), "{said}");
        insta::assert_snapshot!(said, @"the kubeconfig's exec credential plugin failed (exit status 3); what it printed is not shown, as it can hold a token");
    }

    #[test]
    fn the_auth_error_is_found_under_kube_s_layers() {
        let e = kube::Error::Auth(failed_run());
        let found = auth_error(&e).map(words).unwrap();
        assert!(found.starts_with("the kubeconfig's exec credential plugin failed"));
        let other = kube::Error::LinesCodecMaxLineLengthExceeded;
        assert!(auth_error(&other).is_none());
    }

    #[test]
    fn each_kind_in_its_words() {
        let cases = [
            AuthError::AuthExecStart(std::io::Error::from(std::io::ErrorKind::NotFound)),
            AuthError::ExecPluginFailed,
            AuthError::MissingCommand,
            AuthError::ReadTokenFile(
                std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                "/var/run/token".into(),
            ),
            AuthError::AuthExec("Executing corp-login --token PW4242 failed".to_owned()),
        ];
        let said: Vec<String> = cases.iter().map(words).collect();
        assert!(said.iter().all(|s| !s.contains("PW4242")), "{said:?}");
        insta::assert_snapshot!(said.join("\n"));
    }
}
