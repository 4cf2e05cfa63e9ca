//! Standard Webhooks signatures (standardwebhooks.com): HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}` with the secret's base64-decoded bytes (the part after
//! `whsec_`), sent as `webhook-signature: v1,<base64>`.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Secrets are base64 with or without `=` padding: the Standard Webhooks reference libraries
/// accept both, and secrets copied from dashboards often lose it.
const SECRET_BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

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

/// The key bytes of a `whsec_…` secret.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, SecretProblem> {
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
    Ok(key)
}

/// The `webhook-signature` header value.
#[must_use]
pub fn sign(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's published test vector.
    #[test]
    fn matches_the_standard_webhooks_test_vector() {
        let key = decode_secret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn only_whsec_secrets_decode_and_each_refusal_says_why() {
        assert_eq!(
            decode_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
            Err(SecretProblem::NoPrefix)
        );
        assert_eq!(decode_secret("whsec_"), Err(SecretProblem::Empty));
        assert!(matches!(
            decode_secret("whsec_!!!"),
            Err(SecretProblem::NotBase64(_))
        ));
    }

    #[test]
    fn padding_is_optional() {
        // 20 bytes: base64 with one `=` of padding.
        let padded = "whsec_bWFya2VyLXdlYmhvb2stc2VjcmU=";
        let bare = padded.trim_end_matches('=');
        assert_eq!(decode_secret(padded).unwrap(), b"marker-webhook-secre");
        assert_eq!(decode_secret(bare), decode_secret(padded));
    }
}
