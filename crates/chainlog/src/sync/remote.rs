//! The remote: an object store (S3-compatible or a folder) driven from a runtime of its own, so
//! the rest of sync is plain blocking code.

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{Error, RemoteFault, Result};

/// A connected remote: `s3://bucket/prefix` or `file:///path`.
pub struct Remote {
    url: String,
    store: Arc<dyn ObjectStore>,
    prefix: Key,
    rt: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// Connects to `url`. S3 takes its endpoint, region and credentials from the standard AWS
    /// environment variables (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); an `http://` endpoint is allowed as
    /// given (a server on this machine or network).
    pub fn open(url: &str) -> Result<Remote> {
        let bad = |reason: String| Error::Remote {
            remote: url.to_owned(),
            fault: RemoteFault::BadUrl(reason),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Error::io("<sync runtime>", e))?;
        let (store, prefix): (Arc<dyn ObjectStore>, String) =
            if let Some(path) = url.strip_prefix("file://") {
                if !path.starts_with('/') {
                    return Err(bad(
                        "a file:// remote needs an absolute path (file:///…)".into()
                    ));
                }
                let root = std::path::Path::new(path);
                {
                    use std::os::unix::fs::DirBuilderExt;
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(root)
                        .map_err(|e| Error::io(root, e))?;
                }
                let fs = object_store::local::LocalFileSystem::new_with_prefix(root)
                    .map_err(|e| store_error(url, e))?;
                (Arc::new(fs), String::new())
            } else if let Some(rest) = url.strip_prefix("s3://") {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(bad("no bucket in the s3:// url".into()));
                }
                let mut b = object_store::aws::AmazonS3Builder::from_env().with_bucket_name(bucket);
                let endpoint = std::env::var("AWS_ENDPOINT_URL")
                    .or_else(|_| std::env::var("AWS_ENDPOINT_URL_S3"))
                    .ok();
                if let Some(e) = endpoint {
                    b = b.with_allow_http(e.starts_with("http://")).with_endpoint(e);
                }
                let s3 = b.build().map_err(|e| store_error(url, e))?;
                (Arc::new(s3), prefix.trim_matches('/').to_owned())
            } else {
                return Err(bad(
                    "the remote is s3://bucket/prefix or file:///path".into()
                ));
            };
        Ok(Remote {
            url: url.to_owned(),
            store,
            prefix: Key::from(prefix),
            rt,
        })
    }

    /// The remote as given.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn key(&self, name: &str) -> Key {
        let mut parts: Vec<object_store::path::PathPart<'static>> = self
            .prefix
            .parts()
            .map(|p| p.as_ref().to_owned().into())
            .collect();
        parts.extend(name.split('/').map(|p| p.to_owned().into()));
        Key::from_iter(parts)
    }

    /// The object `name` (below the prefix), or `None` when there is none.
    pub fn get(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let key = self.key(name);
        self.rt.block_on(async {
            match self.store.get(&key).await {
                Ok(r) => Ok(Some(
                    r.bytes()
                        .await
                        .map_err(|e| store_error(&self.url, e))?
                        .to_vec(),
                )),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(store_error(&self.url, e)),
            }
        })
    }

    /// Whether object `name` exists.
    pub fn exists(&self, name: &str) -> Result<bool> {
        let key = self.key(name);
        self.rt.block_on(async {
            match self.store.head(&key).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(store_error(&self.url, e)),
            }
        })
    }

    /// Writes object `name` (an object this machine owns; never one another machine wrote).
    pub fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        let key = self.key(name);
        self.rt.block_on(async {
            self.store
                .put(&key, PutPayload::from(bytes))
                .await
                .map(|_| ())
                .map_err(|e| store_error(&self.url, e))
        })
    }

    /// The names of the folders directly below `dir` (`dir/<name>/…`).
    pub fn folders(&self, dir: &str) -> Result<Vec<String>> {
        let key = self.key(dir);
        self.rt.block_on(async {
            let list = self
                .store
                .list_with_delimiter(Some(&key))
                .await
                .map_err(|e| store_error(&self.url, e))?;
            Ok(list
                .common_prefixes
                .iter()
                .filter_map(|p| p.filename().map(str::to_owned))
                .collect())
        })
    }

    /// The names of the objects in `dir` after `after` (a name in `dir`), sorted.
    pub fn names_after(&self, dir: &str, after: Option<&str>) -> Result<Vec<String>> {
        let key = self.key(dir);
        self.rt.block_on(async {
            let stream = match after {
                Some(a) => self
                    .store
                    .list_with_offset(Some(&key), &self.key(&format!("{dir}/{a}"))),
                None => self.store.list(Some(&key)),
            };
            let metas: Vec<object_store::ObjectMeta> = stream
                .try_collect()
                .await
                .map_err(|e| store_error(&self.url, e))?;
            let mut names: Vec<String> = metas
                .iter()
                .filter_map(|m| m.location.filename().map(str::to_owned))
                .collect();
            names.sort();
            Ok(names)
        })
    }
}

fn store_error(url: &str, e: object_store::Error) -> Error {
    Error::Remote {
        remote: url.to_owned(),
        fault: RemoteFault::Store(Box::new(e)),
    }
}
