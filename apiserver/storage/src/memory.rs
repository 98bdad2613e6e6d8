//! The memory backend: nothing is persisted; the store's in-memory index is the only copy.

use super::{Backend, Batch, Loaded, StorageError};

/// Keeps nothing: objects live only in the [`super::Store`]'s index and vanish with the process.
#[derive(Debug, Default)]
pub struct MemoryBackend;

impl Backend for MemoryBackend {
    fn load(&mut self) -> Result<Loaded, StorageError> {
        Ok(Loaded::default())
    }

    fn commit(&mut self, _batch: Batch<'_>) -> Result<(), StorageError> {
        Ok(())
    }
}
