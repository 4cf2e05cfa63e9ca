//! Standard Webhooks signing secrets (`whsec_` followed by base64), decoded once when pins.toml
//! loads: a secret that cannot sign is a config error with its location, and delivery signs with
//! the decoded key instead of reading and decoding the environment on every attempt.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Secrets are base64 with or without `=` padding: the Standard Webhooks reference libraries
/// accept both, and secrets copied from dashboards often lose it.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The key bytes of a `whsec_…` secret. Its `Debug` never shows them.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookKey(Vec<u8>);

impl WebhookKey {
    /// The raw key, for the one place that signs with it.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for WebhookKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookKey(***)")
    }
}

/// Why a webhook secret cannot sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretProblem {
    #[error("it does not start with `whsec_`")]
    NoPrefix,
    #[error("the part after `whsec_` is not base64 ({0})")]
    NotBase64(String),
    #[error("the part after `whsec_` is empty")]
    Empty,
}

/// The key of a `whsec_…` secret.
pub fn decode(secret: &str) -> Result<WebhookKey, SecretProblem> {
    let encoded = secret
        .trim()
        .strip_prefix("whsec_")
        .ok_or(SecretProblem::NoPrefix)?;
    let key = SECRET_BASE64
        .decode(encoded)
        .map_err(|e| SecretProblem::NotBase64(e.to_string()))?;
    if key.is_empty() {
        return Err(SecretProblem::Empty);
    }
    Ok(WebhookKey(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whsec_secrets_decode_and_each_refusal_says_why() {
        assert_eq!(
            decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(SecretProblem::NoPrefix)
        );
        assert_eq!(decode("whsec_"), Err(SecretProblem::Empty));
        assert!(matches!(
            decode("whsec_!!!"),
            Err(SecretProblem::NotBase64(_))
        ));
    }

    #[test]
    fn padding_is_optional() {
        // 20 bytes: base64 with one `=` of padding.
        let padded = "whsec_bWFya2VyLXdlYmhvb2stc2VjcmU=";
        let bare = padded.trim_end_matches('=');
        assert_eq!(decode(padded).unwrap().bytes(), b"marker-webhook-secre");
        assert_eq!(decode(bare), decode(padded));
    }

    #[test]
    fn the_key_is_never_shown() {
        let key = decode("whsec_bWFya2VyLXdlYmhvb2stc2VjcmU=").unwrap();
        assert_eq!(format!("{key:?}"), "WebhookKey(***)");
    }
}
