//! The static-embedding tier: potion-base-2M (model2vec, 64 dimensions, MIT by MinishLab),
//! its files compiled into the binary from `potion-base-2M/` (see the README and LICENSE
//! there). Loading parses the tokenizer and the safetensors once (tens of milliseconds); each
//! text is then a tokenization and a mean of token rows (microseconds), with no model hub, no
//! network and no configuration.

use std::sync::Arc;

use model2vec_rs::model::StaticModel;

use super::{EmbedError, Embedder, Embedding};

/// The model id recorded with every potion-base-2M vector.
pub const POTION_BASE_2M: &str = "minishlab/potion-base-2M";

const TOKENIZER: &[u8] = include_bytes!("potion-base-2M/tokenizer.json");
const WEIGHTS: &[u8] = include_bytes!("potion-base-2M/model.safetensors");
const CONFIG: &[u8] = include_bytes!("potion-base-2M/config.json");

/// Texts longer than this many tokens are cut (the model2vec default).
const MAX_TOKENS: usize = 512;

/// potion-base-2M, loaded from the bytes in the binary.
pub struct StaticEmbedder {
    /// The loaded model (vocabulary rows, tokenizer).
    model: StaticModel,
    /// [`POTION_BASE_2M`], shared by every vector returned.
    id: Arc<str>,
}

impl std::fmt::Debug for StaticEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticEmbedder")
            .field("model", &self.id)
            .field("dimension", &self.model.dim())
            .finish()
    }
}

impl StaticEmbedder {
    /// Loads potion-base-2M from the bytes compiled into the binary. Output vectors are
    /// L2-normalized, as the model's config asks.
    pub fn potion_base_2m() -> Result<Self, EmbedError> {
        let model =
            StaticModel::from_bytes(TOKENIZER, WEIGHTS, CONFIG, Some(true)).map_err(|e| {
                EmbedError::ModelLoad {
                    model: POTION_BASE_2M.to_owned(),
                    reason: format!("{e:#}"),
                }
            })?;
        Ok(Self {
            model,
            id: Arc::from(POTION_BASE_2M),
        })
    }
}

impl Embedder for StaticEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.model.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Embedding>, EmbedError> {
        let owned: Vec<String> = texts.iter().map(|t| (*t).to_owned()).collect();
        let dim = self.model.dim();
        let vectors = self
            .model
            .encode_with_args(&owned, Some(MAX_TOKENS), owned.len().max(1));
        vectors
            .into_iter()
            .map(|v| {
                if v.len() == dim {
                    Ok(Embedding::new(Arc::clone(&self.id), v))
                } else {
                    Err(EmbedError::DimensionMismatch {
                        model: POTION_BASE_2M.to_owned(),
                        expected: dim,
                        got: v.len(),
                    })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn loads_from_the_binary_and_records_model_and_dimension() {
        let e = StaticEmbedder::potion_base_2m().expect("model loads");
        assert_eq!(e.model(), POTION_BASE_2M);
        assert_eq!(e.dimension(), 64);
        let v = e.embed_one("a walk on the beach").expect("embeds");
        assert_eq!(v.model(), POTION_BASE_2M);
        assert_eq!(v.dimension(), 64);
        let norm: f32 = v.vector().iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "normalized, got {norm}");
    }

    #[test]
    fn same_text_same_bits_and_related_texts_are_closer() {
        let e = StaticEmbedder::potion_base_2m().expect("model loads");
        let out = e
            .embed(&[
                "I adopted a puppy",
                "my new dog",
                "quarterly tax filing",
                "I adopted a puppy",
            ])
            .expect("embeds");
        assert_eq!(out.len(), 4);
        let bits = |v: &Embedding| v.vector().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out[0]), bits(&out[3]));
        let near = cosine(out[0].vector(), out[1].vector());
        let far = cosine(out[0].vector(), out[2].vector());
        assert!(near > far, "puppy~dog {near} should beat puppy~tax {far}");
    }
}
