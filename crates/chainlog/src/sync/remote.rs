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
                // The AWS CLI's files fill what the environment leaves unset.
                let files = AwsFiles::read();
                let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
                if env("AWS_ACCESS_KEY_ID").is_none()
                    && let (Some(id), Some(secret)) = (
                        files.get("aws_access_key_id"),
                        files.get("aws_secret_access_key"),
                    )
                {
                    b = b.with_access_key_id(id).with_secret_access_key(secret);
                    if let Some(t) = files.get("aws_session_token") {
                        b = b.with_token(t);
                    }
                }
                if env("AWS_REGION")
                    .or_else(|| env("AWS_DEFAULT_REGION"))
                    .is_none()
                    && let Some(r) = files.get("region")
                {
                    b = b.with_region(r);
                }
                let endpoint = env("AWS_ENDPOINT_URL")
                    .or_else(|| env("AWS_ENDPOINT_URL_S3"))
                    .or_else(|| files.get("endpoint_url").map(str::to_owned));
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

/// The settings of the AWS CLI's profile (`AWS_PROFILE`, else `default`) from its credentials
/// and config files (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`, else `~/.aws/…`).
#[derive(Debug, Default)]
struct AwsFiles(std::collections::HashMap<String, String>);

impl AwsFiles {
    fn read() -> AwsFiles {
        let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let path = |var: &str, name: &str| {
            std::env::var_os(var)
                .map(std::path::PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".aws").join(name)))
        };
        let mut out = AwsFiles::default();
        // In `config`, a profile's section is `[profile NAME]` (but `[default]`).
        let config_section = if profile == "default" {
            "default".to_owned()
        } else {
            format!("profile {profile}")
        };
        for (file, section) in [
            (path("AWS_CONFIG_FILE", "config"), config_section),
            (
                path("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
                profile.clone(),
            ),
        ] {
            let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) else {
                continue;
            };
            out.parse(&text, &section);
        }
        out
    }

    fn parse(&mut self, text: &str, section: &str) {
        let mut inside = false;
        for line in text.lines().map(str::trim) {
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                inside = name.trim() == section;
            } else if inside
                && let Some((k, v)) = line.split_once('=')
                && !line.starts_with(['#', ';'])
            {
                self.0.insert(k.trim().to_lowercase(), v.trim().to_owned());
            }
        }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }
}

fn store_error(url: &str, e: object_store::Error) -> Error {
    Error::Remote {
        remote: url.to_owned(),
        fault: RemoteFault::Store(Box::new(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::AwsFiles;

    #[test]
    fn the_aws_files_profile_is_read() {
        let mut f = AwsFiles::default();
        f.parse(
            "[default]\nregion = eu-west-1\n[profile work]\nregion = auto\nendpoint_url = https://r2.example\n# x = y\n",
            "profile work",
        );
        f.parse(
            "[work]\naws_access_key_id = AK\naws_secret_access_key = SK\n",
            "work",
        );
        assert_eq!(f.get("region"), Some("auto"));
        assert_eq!(f.get("endpoint_url"), Some("https://r2.example"));
        assert_eq!(f.get("aws_access_key_id"), Some("AK"));
        assert_eq!(f.get("x"), None);
    }
}
