//! What an LLM gateway between modelpin and the provider says about who really answered.
//!
//! Gateways give a stable public model name to clients and route it to deployments behind it.
//! The LiteLLM proxy rewrites the body's `model` to the public name the client asked for (unless a
//! fallback happened), so a deployment swapped behind the same name is invisible in the body; its
//! response headers name the deployment, its API base, fallbacks and the cost it charged. Those
//! headers are the served identity, the upstream and the reported cost. Other gateways state less:
//! Kong names the `provider/model` it chose; Cloudflare AI Gateway, Portkey and Helicone only say
//! which step of a fallback chain answered. Header names and meanings, with sources:
//!
//! - LiteLLM (`litellm/proxy/common_request_processing.py`, `get_custom_headers`, v1.106):
//!   `x-litellm-model-name` (the deployment's `litellm_params.model`), `x-litellm-model-id`
//!   (the deployment's `model_info.id`, else a hash of its settings), `x-litellm-model-api-base`,
//!   `x-litellm-model-group` (the public name that answered), `x-litellm-attempted-fallbacks`,
//!   `x-litellm-attempted-retries`, `x-litellm-response-cost` (USD).
//! - Kong AI Gateway (docs, AI Proxy plugin; changelog #13472): `X-Kong-LLM-Model`.
//! - Cloudflare AI Gateway (developers.cloudflare.com, "Fallbacks"): `cf-aig-step`, 0 for the
//!   primary, n for the n-th fallback.
//! - Portkey (docs, "Fallbacks"; Portkey-AI/gateway `src/globals.ts`):
//!   `x-portkey-last-used-option-index`, the config target that answered.
//! - Helicone (gateway source): `helicone-fallback-index`.

use crate::provider::{RawResponse, Reply};

/// One gateway's statement about an answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gateway {
    /// `litellm`, `kong`, `cloudflare`, `portkey` or `helicone`.
    pub name: &'static str,
    /// The model the body names: for LiteLLM the public name the client asked for.
    pub public_model: Option<String>,
    /// The deployment that answered (`provider/model`), when the gateway names it.
    pub deployment: Option<String>,
    pub deployment_id: Option<String>,
    /// Where the deployment sends its calls (LiteLLM's API base): the upstream.
    pub api_base: Option<String>,
    /// Fallbacks taken before this answer; 0 when the primary answered.
    pub fallbacks: u32,
    pub retries: u32,
    /// What the gateway charged for the call, USD.
    pub cost_usd: Option<f64>,
}

/// The gateway's headers on `response`, if a known gateway sent any.
#[must_use]
pub fn read(response: &RawResponse) -> Option<Gateway> {
    litellm(response)
        .or_else(|| kong(response))
        .or_else(|| fallback_index(response, "cloudflare", "cf-aig-step"))
        .or_else(|| fallback_index(response, "portkey", "x-portkey-last-used-option-index"))
        .or_else(|| fallback_index(response, "helicone", "helicone-fallback-index"))
}

fn litellm(response: &RawResponse) -> Option<Gateway> {
    let deployment = text(response, "x-litellm-model-name");
    let deployment_id = text(response, "x-litellm-model-id");
    if deployment.is_none() && deployment_id.is_none() {
        return None;
    }
    Some(Gateway {
        name: "litellm",
        deployment,
        deployment_id,
        api_base: text(response, "x-litellm-model-api-base"),
        fallbacks: number(response, "x-litellm-attempted-fallbacks").unwrap_or(0),
        retries: number(response, "x-litellm-attempted-retries").unwrap_or(0),
        cost_usd: text(response, "x-litellm-response-cost")
            .and_then(|c| c.parse::<f64>().ok())
            .filter(|c| c.is_finite() && *c >= 0.0),
        ..Gateway::default()
    })
}

fn kong(response: &RawResponse) -> Option<Gateway> {
    Some(Gateway {
        name: "kong",
        deployment: Some(text(response, "x-kong-llm-model")?),
        ..Gateway::default()
    })
}

fn fallback_index(response: &RawResponse, name: &'static str, header: &str) -> Option<Gateway> {
    Some(Gateway {
        name,
        fallbacks: number(response, header)?,
        ..Gateway::default()
    })
}

/// The reply as the gateway says it was served: the deployment is the served model (the body's
/// name is kept as the public one), the API base the upstream, a fallback the fallback model,
/// and the gateway's charge the reported cost.
#[must_use]
pub fn apply(mut reply: Reply, mut gateway: Gateway) -> Reply {
    gateway.public_model.clone_from(&reply.served_model);
    if let Some(deployment) = &gateway.deployment {
        reply.served_model = Some(deployment.clone());
        if gateway.fallbacks > 0 {
            reply.fallback_model = Some(deployment.clone());
        }
    }
    if reply.upstream.is_none() {
        reply.upstream.clone_from(&gateway.api_base);
    }
    if gateway.cost_usd.is_some() {
        reply.reported_cost_usd = gateway.cost_usd;
    }
    reply.gateway = Some(Box::new(gateway));
    reply
}

fn text(response: &RawResponse, name: &str) -> Option<String> {
    let value = response.header(name)?.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

fn number(response: &RawResponse, name: &str) -> Option<u32> {
    response.header(name)?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(model: &str) -> Reply {
        Reply {
            served_model: Some(model.to_owned()),
            ..Reply::default()
        }
    }

    #[test]
    fn litellm_deployment_is_the_served_model() {
        // Header values as the LiteLLM proxy 1.106.12 sent them for a deployment swapped
        // behind the public name `gpt-4o`.
        let r = RawResponse::with_headers(&[
            ("x-litellm-model-name", "openai/gpt-4o-mini-2024-07-18"),
            (
                "x-litellm-model-id",
                "f73d3203f8cff35ccfb1054013cd7fe811fa086651aa75431b7986f34715e97c",
            ),
            ("x-litellm-model-api-base", "https://api.openai.com"),
            ("x-litellm-model-group", "gpt-4o"),
            ("x-litellm-attempted-fallbacks", "0"),
            ("x-litellm-attempted-retries", "0"),
            ("x-litellm-response-cost", "1.35e-05"),
        ]);
        let out = apply(reply("gpt-4o"), read(&r).unwrap());
        assert_eq!(
            out.served_model.as_deref(),
            Some("openai/gpt-4o-mini-2024-07-18")
        );
        assert_eq!(out.fallback_model, None);
        assert_eq!(out.upstream.as_deref(), Some("https://api.openai.com"));
        assert_eq!(out.reported_cost_usd, Some(1.35e-05));
        let g = out.gateway.unwrap();
        assert_eq!(
            (g.name, g.public_model.as_deref()),
            ("litellm", Some("gpt-4o"))
        );
    }

    #[test]
    fn a_fallback_names_the_fallback_model() {
        let r = RawResponse::with_headers(&[
            ("x-litellm-model-name", "openai/gpt-4o-mini-2024-07-18"),
            ("x-litellm-attempted-fallbacks", "1"),
        ]);
        let out = apply(reply("gpt-4o-mini-2024-07-18"), read(&r).unwrap());
        assert_eq!(
            out.fallback_model.as_deref(),
            Some("openai/gpt-4o-mini-2024-07-18")
        );
    }

    #[test]
    fn other_gateways_and_none() {
        type Seen<'a> = Option<(&'a str, Option<&'a str>, u32)>;
        let table: [(&[(&str, &str)], Seen); 7] = [
            (&[], None),
            (
                &[("x-kong-llm-model", "openai/gpt-4o")],
                Some(("kong", Some("openai/gpt-4o"), 0)),
            ),
            (&[("cf-aig-step", "1")], Some(("cloudflare", None, 1))),
            (
                &[("x-portkey-last-used-option-index", "2")],
                Some(("portkey", None, 2)),
            ),
            (
                &[("helicone-fallback-index", "0")],
                Some(("helicone", None, 0)),
            ),
            (&[("cf-aig-step", "garbage")], None),
            (&[("x-litellm-response-cost", "0.1")], None),
        ];
        for (headers, want) in table {
            let got = read(&RawResponse::with_headers(headers));
            let got = got
                .as_ref()
                .map(|g| (g.name, g.deployment.as_deref(), g.fallbacks));
            assert_eq!(got, want, "{headers:?}");
        }
    }

    #[test]
    fn hostile_costs_are_no_cost() {
        for cost in ["-1", "NaN", "inf", "1e999", "x"] {
            let r = RawResponse::with_headers(&[
                ("x-litellm-model-name", "d"),
                ("x-litellm-response-cost", cost),
            ]);
            assert_eq!(read(&r).unwrap().cost_usd, None, "{cost}");
        }
    }
}
