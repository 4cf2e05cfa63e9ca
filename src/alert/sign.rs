//! Standard Webhooks signatures (standardwebhooks.com): HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{body}` with the secret's key bytes (decoded from `whsec_…`
//! when the config loads, `config::webhook_key`), sent as `webhook-signature: v1,<base64>`.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::config::WebhookKey;

/// The `webhook-signature` header value.
#[must_use]
pub fn sign(key: &WebhookKey, id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(key.bytes()).expect("HMAC takes keys of any length");
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
        let key =
            crate::config::webhook_key::decode("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &key,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
