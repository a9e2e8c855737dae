//! Azure OpenAI's base URL, resolved as pi resolves it, once: when the target is built.
//!
//! pi's catalog gives `azure-openai-responses` no base URL: pi takes it from the environment where the Harness runs
//! (`AZURE_OPENAI_BASE_URL`, else `AZURE_OPENAI_RESOURCE_NAME`'s default URL, else the model's base URL) and
//! normalizes an Azure host's path to `/openai/v1`. [`crate::spec::resolve`] (and `jr2-probe check --base-url`)
//! resolve it here, so the lines name the host the request goes to and the wire sends to the target's base URL as
//! it stands. A target whose base URL could not be resolved keeps [`PLACEHOLDER`]; the wire then asks again, only
//! to say why (the same environment gives the same answer).

/// What the base URL of a target is while nothing names Azure's: a host on the reserved `.invalid` domain.
pub const PLACEHOLDER: &str = "https://azure-openai.invalid/openai/v1";

/// The `api-version` pi sends to Azure when `AZURE_OPENAI_API_VERSION` is not set.
pub const DEFAULT_API_VERSION: &str = "v1";

/// An environment lookup; pi reads an empty value as unset.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn value(env: Env<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// The placeholder of an unresolved base URL (or any URL on the `.invalid` domain).
pub fn is_placeholder(url: &reqwest::Url) -> bool {
    url.host_str()
        .is_some_and(|h| h == "invalid" || h.ends_with(".invalid"))
}

/// pi's Azure base URL: `AZURE_OPENAI_BASE_URL`, else `AZURE_OPENAI_RESOURCE_NAME`'s default URL, else `model_base`
/// (unless it is the placeholder); normalized. The error is the `<error>` of a Turn that fails before it sends.
pub fn base_url(model_base: &reqwest::Url, env: Env<'_>) -> Result<reqwest::Url, String> {
    let from_env = value(env, "AZURE_OPENAI_BASE_URL")
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    let from_resource = || {
        value(env, "AZURE_OPENAI_RESOURCE_NAME")
            .map(|name| format!("https://{name}.openai.azure.com/openai/v1"))
    };
    match from_env.or_else(from_resource) {
        Some(text) => normalize(&text),
        None if !is_placeholder(model_base) => normalize(model_base.as_str()),
        None => Err(
            "no Azure OpenAI base URL: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME where the Harness \
             runs (a Turn fails the same way before it sends anything)"
                .to_owned(),
        ),
    }
}

/// The `api-version` a request carries: `AZURE_OPENAI_API_VERSION`, else [`DEFAULT_API_VERSION`].
pub fn api_version(env: Env<'_>) -> String {
    value(env, "AZURE_OPENAI_API_VERSION").unwrap_or_else(|| DEFAULT_API_VERSION.to_owned())
}

/// pi's `normalizeAzureBaseUrl`: an Azure host (`*.openai.azure.com`, `*.cognitiveservices.azure.com`,
/// `*.ai.azure.com`) whose path is empty, `/openai` or `/openai/v1/responses` gets `/openai/v1` and loses its query.
/// Normalizing a normalized URL changes nothing.
pub fn normalize(text: &str) -> Result<reqwest::Url, String> {
    let trimmed = text.trim().trim_end_matches('/');
    let mut url = reqwest::Url::parse(trimmed).map_err(|e| {
        format!(
            "the Azure OpenAI base URL \"{}\" is not a URL ({e})",
            crate::sanitize::display_url(trimmed)
        )
    })?;
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let azure_host = [
        ".openai.azure.com",
        ".cognitiveservices.azure.com",
        ".ai.azure.com",
    ]
    .iter()
    .any(|suffix| host.ends_with(suffix));
    let path = url.path().trim_end_matches('/').to_owned();
    if azure_host && matches!(path.as_str(), "" | "/openai" | "/openai/v1/responses") {
        url.set_path("/openai/v1");
        url.set_query(None);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::spec::fixed_env as env_of;

    #[test]
    fn the_environment_comes_first_then_the_models_url() {
        let placeholder = reqwest::Url::parse(PLACEHOLDER).unwrap();
        let model = reqwest::Url::parse("https://127.0.0.1:8443/openai/v1/").unwrap();
        let none = env_of(&[]);
        assert!(
            base_url(&placeholder, &none)
                .unwrap_err()
                .starts_with("no Azure OpenAI base URL")
        );
        assert_eq!(
            base_url(&model, &none).unwrap().as_str(),
            "https://127.0.0.1:8443/openai/v1"
        );
        let resource = env_of(&[("AZURE_OPENAI_RESOURCE_NAME", "contoso")]);
        assert_eq!(
            base_url(&model, &resource).unwrap().as_str(),
            "https://contoso.openai.azure.com/openai/v1"
        );
        let both = env_of(&[
            (
                "AZURE_OPENAI_BASE_URL",
                " https://c.cognitiveservices.azure.com/openai/ ",
            ),
            ("AZURE_OPENAI_RESOURCE_NAME", "ignored"),
        ]);
        assert_eq!(
            base_url(&placeholder, &both).unwrap().as_str(),
            "https://c.cognitiveservices.azure.com/openai/v1"
        );
        let empty = env_of(&[
            ("AZURE_OPENAI_BASE_URL", ""),
            ("AZURE_OPENAI_API_VERSION", ""),
        ]);
        assert_eq!(
            base_url(&model, &empty).unwrap().as_str(),
            "https://127.0.0.1:8443/openai/v1"
        );
        assert_eq!(api_version(&empty), "v1");
        let bad = env_of(&[("AZURE_OPENAI_BASE_URL", "not a url")]);
        assert!(
            base_url(&placeholder, &bad)
                .unwrap_err()
                .contains("\"not a url\" is not a URL")
        );
    }

    #[test]
    fn normalizing_twice_changes_nothing() {
        for text in [
            "https://r.openai.azure.com",
            "https://r.openai.azure.com/openai/v1/responses?api-version=x",
            "http://h/v1/",
            "https://proxy.example/azure",
        ] {
            let once = normalize(text).unwrap();
            assert_eq!(normalize(once.as_str()).unwrap(), once, "{text}");
        }
    }
}
