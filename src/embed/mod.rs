//! Embeddings: an effects provider that turns text into vectors. It knows no ledger and no MCP:
//! callers take its vectors as effects before a decision and record, with every vector, the
//! model that made it and its dimension ([`Embedding`]), so a decision that compares vectors can
//! refuse to compare vectors of different models (the dimension lock-in other memory systems
//! suffer when their model changes).
//!
//! One tier exists today: [`StaticEmbedder`], potion-base-2M static embeddings compiled into the
//! binary (zero configuration). The [`Embedder`] trait is the seam for the tiers to come (a
//! MiniLM model run in process, an OpenAI-compatible endpoint); they are not built here.

mod static_model;

use std::sync::Arc;

pub use static_model::{POTION_BASE_2M, StaticEmbedder};

/// Why an embedder could not produce vectors.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model's files could not be read as a model (a corrupt or incompatible vendored file).
    /// Reaches a client as a tool error naming the model; nothing the client can fix.
    #[error("embedding model {model} could not be loaded: {reason}")]
    ModelLoad {
        /// The model id.
        model: String,
        /// What the loader said.
        reason: String,
    },
    /// The model returned a vector whose length is not its declared dimension.
    #[error("embedding model {model} returned {got} dimensions, expected {expected}")]
    DimensionMismatch {
        /// The model id.
        model: String,
        /// The declared dimension.
        expected: usize,
        /// The length returned.
        got: usize,
    },
}

/// One vector together with the model that made it. The model id and dimension travel with the
/// vector so stored vectors and query vectors of different models are never compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The model id, e.g. `minishlab/potion-base-2M`; shared by every vector of one embedder.
    model: Arc<str>,
    /// The components; its length is the dimension.
    vector: Vec<f32>,
}

impl Embedding {
    /// A vector made by `model`. Its dimension is `vector.len()`.
    pub fn new(model: Arc<str>, vector: Vec<f32>) -> Self {
        Self { model, vector }
    }

    /// The id of the model that made this vector.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The shared model id (cheap to clone into many records).
    pub fn model_arc(&self) -> &Arc<str> {
        &self.model
    }

    /// The number of components.
    pub fn dimension(&self) -> usize {
        self.vector.len()
    }

    /// The components.
    pub fn vector(&self) -> &[f32] {
        &self.vector
    }

    /// The components, taken out.
    pub fn into_vector(self) -> Vec<f32> {
        self.vector
    }

    /// The components as the ledger records them: base64 (standard alphabet, padded) of each
    /// component's IEEE 754 binary32 bytes, little-endian, in order.
    pub fn to_base64(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::with_capacity(self.vector.len() * 4);
        for x in &self.vector {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// The vector [`Embedding::to_base64`] wrote, made by `model`; `None` when `text` is not
    /// such an encoding.
    pub fn from_base64(model: Arc<str>, text: &str) -> Option<Self> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()?;
        if bytes.len() % 4 != 0 {
            return None;
        }
        let vector = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(Self { model, vector })
    }
}

/// Something that turns texts into vectors of one model. Implementations are deterministic:
/// the same text gives the same vector bit for bit, on every call and every run of one build.
pub trait Embedder: Send + Sync {
    /// The model id recorded with every vector (and, later, in event provenance).
    fn model(&self) -> &str;

    /// The dimension of every vector this embedder returns.
    fn dimension(&self) -> usize;

    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError>;

    /// The vector of one text.
    fn embed_one(&self, text: &str) -> Result<Embedding, EmbedError> {
        let mut out = self.embed(&[text])?;
        out.pop().ok_or_else(|| EmbedError::DimensionMismatch {
            model: self.model().to_owned(),
            expected: self.dimension(),
            got: 0,
        })
    }
}
