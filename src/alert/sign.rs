//! Standard Webhooks signatures (standardwebhooks.com): HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}` with the secret's base64-decoded bytes (the part after
//! `whsec_`), sent as `webhook-signature: v1,<base64>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key bytes of a `whsec_…` secret; `None` when it is not one.
#[must_use]
pub fn decode_secret(secret: &str) -> Option<Vec<u8>> {
    let encoded = secret.trim().strip_prefix("whsec_")?;
    STANDARD.decode(encoded).ok().filter(|k| !k.is_empty())
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
    fn only_whsec_secrets_decode() {
        assert!(decode_secret("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_none());
        assert!(decode_secret("whsec_").is_none());
        assert!(decode_secret("whsec_!!!").is_none());
    }
}
