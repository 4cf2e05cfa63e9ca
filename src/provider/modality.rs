//! What kind of model an ID names, from its family: modelpin's probes and first-token tier are
//! chat calls, so only a chat model can be audited by them. An embedding, audio, image, video or
//! moderation model cannot be pinned; `scan` judges its lifecycle wherever the code names it, and
//! `deprecations --data` lists its table rows.
//!
//! Families follow the providers' own model lists (OpenAI's models page names `text-embedding-*`,
//! `whisper-1`, `tts-1*`, `gpt-4o*-transcribe`, `gpt-4o-mini-tts`, `dall-e-*`, `gpt-image-*`,
//! `sora-*`, `omni-moderation-*`, `text-moderation-*`; Google's `text-embedding-*`,
//! `gemini-embedding-*`, `embedding-001`, `imagen-*`, `veo-*`; Mistral's `mistral-embed`,
//! `mistral-moderation-*`; Cohere's `embed-*`). Anything else is taken as chat: an unknown ID is
//! never refused a probe.

/// What a model takes and returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modality {
    Chat,
    Embedding,
    Audio,
    Image,
    Video,
    Moderation,
}

impl Modality {
    /// The family an ID belongs to; `Chat` unless its name says otherwise.
    #[must_use]
    pub fn of(id: &str) -> Modality {
        let id = id.trim().to_ascii_lowercase();
        // The model's own name: after a vendor or path prefix; a Bedrock ID's name follows a dot
        // (`amazon.titan-embed-text-v2:0`, `us.`…).
        let name = id.rsplit('/').next().unwrap_or(&id);
        let has = |needle: &str| name.contains(needle);
        let starts = |prefixes: &[&str]| {
            prefixes
                .iter()
                .any(|p| name.split('.').any(|part| part.starts_with(p)))
        };
        if has("moderation") {
            Modality::Moderation
        } else if has("embed") {
            Modality::Embedding
        } else if starts(&[
            "whisper",
            "tts-",
            "gpt-4o-transcribe",
            "gpt-4o-mini-transcribe",
        ]) || has("-tts")
            || name.ends_with("-transcribe")
        {
            Modality::Audio
        } else if starts(&["dall-e", "gpt-image", "imagen-", "chatgpt-image"]) {
            Modality::Image
        } else if starts(&["sora", "veo-"]) {
            Modality::Video
        } else {
            Modality::Chat
        }
    }

    /// What the ID names when no chat probe can audit it (`an embedding model`, for messages);
    /// `None` for a chat model.
    #[must_use]
    pub fn non_chat(id: &str) -> Option<&'static str> {
        match Modality::of(id) {
            Modality::Chat => None,
            Modality::Embedding => Some("an embedding model"),
            Modality::Audio => Some("an audio model"),
            Modality::Image => Some("an image model"),
            Modality::Video => Some("a video model"),
            Modality::Moderation => Some("a moderation model"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Modality::{self, Audio, Chat, Embedding, Image, Moderation, Video};

    #[test]
    fn families() {
        let table = [
            ("gpt-4o-2024-08-06", Chat),
            ("claude-sonnet-4-5-20250929", Chat),
            ("gpt-4o-audio-preview", Chat),
            ("gpt-realtime", Chat),
            ("gemini-2.5-flash-preview-tts", Audio),
            ("text-embedding-3-small", Embedding),
            ("text-embedding-ada-002", Embedding),
            ("models/gemini-embedding-001", Embedding),
            ("amazon.titan-embed-text-v2:0", Embedding),
            ("mistral-embed", Embedding),
            ("whisper-1", Audio),
            ("tts-1-hd", Audio),
            ("gpt-4o-mini-tts", Audio),
            ("gpt-4o-transcribe", Audio),
            ("dall-e-3", Image),
            ("gpt-image-1", Image),
            ("imagen-4.0-generate-001", Image),
            ("sora-2", Video),
            ("veo-3.0-generate-001", Video),
            ("omni-moderation-latest", Moderation),
            ("text-moderation-stable", Moderation),
            ("mistral-moderation-latest", Moderation),
            ("openai/text-embedding-3-small", Embedding),
            ("meta-llama/llama-3.1-8b-instruct", Chat),
        ];
        for (id, want) in table {
            assert_eq!(Modality::of(id), want, "{id}");
        }
    }
}
