//! Settings: one set of keys, read from LSP initialization options and
//! workspace configuration, from `kernel-lsp.toml`, or from
//! `[tool.kernel-lsp]` in the nearest `pyproject.toml`. Keys are kebab-case.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("invalid configuration in {path}: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("unknown target GPU `{0}`; known: {known}", known = GPUS.iter().map(|g| g.key).collect::<Vec<_>>().join(", "))]
    UnknownGpu(String),
    #[error(
        "unknown compile.target `{0}`: write a compute capability such as `sm90` or `sm_80`, or a target-gpu name"
    )]
    UnknownTarget(String),
    #[error(
        "unknown rule selector `{selector}` in `{key}`; valid: {codes}, a prefix of them such as `KL00`, or `ALL`",
        codes = RULE_CODES.join(", ")
    )]
    UnknownSelector { selector: String, key: String },
}

/// The rule codes `select` and `ignore` choose from: the registry's
/// (`rules::RULES`, a test keeps the two equal). Kept here because settings
/// are validated below the rules layer. KL9xx diagnostics are not rules.
pub const RULE_CODES: &[&str] = &[
    "KL001", "KL002", "KL003", "KL004", "KL005", "KL006", "KL007", "KL008", "KL009", "KL010", "KL011", "KL101",
    "KL102", "KL103", "KL104", "KL105", "KL106", "KL107", "KL108", "KL109",
];

/// Checks `select`/`ignore` entries (ruff-style selectors: a rule code, a
/// prefix of at least one, or `ALL`); `key` names where they came from in the error.
pub fn validate_selectors(selectors: &[String], key: &str) -> Result<(), ConfigError> {
    match selectors.iter().find(|s| !is_selector(s)) {
        Some(s) => Err(ConfigError::UnknownSelector { selector: s.clone(), key: key.to_string() }),
        None => Ok(()),
    }
}

fn is_selector(s: &str) -> bool {
    s == "ALL" || (!s.is_empty() && RULE_CODES.iter().any(|c| c.starts_with(s)))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct Settings {
    /// Rule codes (or prefixes such as `KL00`) to report; empty means all.
    pub select: Vec<String>,
    /// Rule codes (or prefixes) never to report.
    pub ignore: Vec<String>,
    /// Target GPU for resource estimates (`h100`, `h200`, `a100`, `l4`, `rtx4090`, `turing`, ...).
    pub target_gpu: String,
    /// Python interpreter that has torch and triton, for benchmarks.
    pub python: Option<String>,
    /// Explicit reference file for benchmarks (relative to the config file).
    pub reference: Option<String>,
    pub atol: f64,
    pub rtol: f64,
    pub bench: BenchSettings,
    pub llm: LlmSettings,
    pub compile: CompileSettings,
    /// Directory with prompt templates that override the embedded ones.
    pub prompts_dir: Option<String>,
    /// The public names of `triton.language` in the Triton of `python`, read
    /// at the edge (the CLI's start, the server's background task) and never
    /// by a rule; `None`: KL005 uses the bundled list.
    #[serde(skip)]
    pub triton_names: Option<std::sync::Arc<TritonNames>>,
    /// Why the bundled list is used although `python` is set (it could not be asked).
    #[serde(skip)]
    pub triton_names_fallback: Option<String>,
}

/// The public names of one installed `triton.language`.
#[derive(Debug, Clone, PartialEq)]
pub struct TritonNames {
    /// `triton.__version__`.
    pub version: String,
    /// The interpreter asked.
    pub python: String,
    pub names: std::collections::HashSet<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct BenchSettings {
    pub warmup: u32,
    pub repeats: u32,
    /// Seconds before a benchmark run is killed.
    pub timeout: f64,
    /// Fresh random inputs for the correctness check (KernelBench uses 5).
    pub correctness_trials: u32,
    /// Which tolerance decides "correct": `"kernelbench"` (KernelBench main's
    /// for the precision: 1e-4 for fp32, 1e-2 for fp16/bf16), `"legacy"` (the
    /// `atol`/`rtol` settings, 1e-2), or a number (atol = rtol).
    pub tolerance: Tolerance,
    /// The task precision inputs, init inputs and models are cast to: `fp32`, `fp16` or `bf16`.
    pub precision: Precision,
}

/// The profile that decides a benchmark's verdict (`bench.tolerance`, `--tolerance`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    KernelBench,
    Legacy,
    /// atol = rtol = this value.
    Value(f64),
}

impl std::str::FromStr for Tolerance {
    type Err = String;

    fn from_str(s: &str) -> Result<Tolerance, String> {
        match s.trim() {
            "kernelbench" => Ok(Tolerance::KernelBench),
            "legacy" => Ok(Tolerance::Legacy),
            other => match other.parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(Tolerance::Value(v)),
                _ => Err(format!("expected `kernelbench`, `legacy` or a non-negative number, got `{other}`")),
            },
        }
    }
}

impl std::fmt::Display for Tolerance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tolerance::KernelBench => f.write_str("kernelbench"),
            Tolerance::Legacy => f.write_str("legacy"),
            Tolerance::Value(v) => write!(f, "{v}"),
        }
    }
}

impl Serialize for Tolerance {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tolerance::Value(v) => s.serialize_f64(*v),
            named => s.serialize_str(&named.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Tolerance {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Tolerance, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Name(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(v) => Tolerance::Value(v).to_string().parse().map_err(serde::de::Error::custom),
            Raw::Name(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Fp32,
    Fp16,
    Bf16,
}

impl Precision {
    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Fp16 => "fp16",
            Precision::Bf16 => "bf16",
        }
    }
}

/// `[compile]`: the user's Triton compiling each kernel while they type (and `check --compile`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct CompileSettings {
    /// Compile kernels in the editor after a pause in typing and on save.
    pub enabled: bool,
    /// Milliseconds without an edit before the changed kernels are compiled.
    pub debounce_ms: u64,
    /// The architecture compiled for where this machine has no GPU: `sm90`, `sm_80`, or a `target-gpu` name.
    pub target: String,
    /// Launch or autotune configurations compiled per kernel, at most.
    pub max_configs: u32,
    /// Seconds one compilation may take before the worker is restarted.
    pub timeout: f64,
}

impl Default for CompileSettings {
    fn default() -> Self {
        CompileSettings { enabled: true, debounce_ms: 500, target: "sm90".to_string(), max_configs: 8, timeout: 60.0 }
    }
}

/// The compute capability a `compile.target` names (`sm90`, `sm_90`, `90`, `h100`), e.g. 90.
pub(crate) fn parse_target(s: &str) -> Option<u32> {
    let t = s.trim().to_ascii_lowercase().replace(['_', '-', ' '], "");
    let digits = t.strip_prefix("sm").unwrap_or(&t);
    match digits.parse::<u32>() {
        Ok(n) if (50..=200).contains(&n) => Some(n),
        Ok(_) => None,
        Err(_) => gpu_by_name(s).map(|g| g.sm),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default, deny_unknown_fields)]
pub struct LlmSettings {
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable that holds the API key; none for local servers.
    pub api_key_env: Option<String>,
    pub candidates: u32,
    pub repairs: u32,
    /// Seconds for one chat-completions call.
    pub timeout: f64,
    pub max_tokens: u32,
    /// Where answers run during verification: `bwrap` or `none` (said
    /// explicitly); unset: bwrap, and no rewrite where it cannot start.
    pub sandbox: Option<SandboxSetting>,
    /// The data-segment limit of sandboxed code, in MiB.
    pub sandbox_memory_mb: u64,
    /// Answers larger than this many KiB are refused unread.
    pub max_answer_kb: u64,
}

/// `llm.sandbox`: where LLM answers run during verification (see `llm::sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxSetting {
    Bwrap,
    None,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            select: Vec::new(),
            ignore: Vec::new(),
            target_gpu: "h100".to_string(),
            python: None,
            reference: None,
            atol: 1e-2,
            rtol: 1e-2,
            bench: BenchSettings::default(),
            llm: LlmSettings::default(),
            compile: CompileSettings::default(),
            prompts_dir: None,
            triton_names: None,
            triton_names_fallback: None,
        }
    }
}

impl Default for BenchSettings {
    fn default() -> Self {
        BenchSettings {
            warmup: 10,
            repeats: 50,
            timeout: 300.0,
            correctness_trials: 5,
            tolerance: Tolerance::KernelBench,
            precision: Precision::Fp32,
        }
    }
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            base_url: "http://127.0.0.1:8000/v1".to_string(),
            model: "gpt-4o".to_string(),
            api_key_env: None,
            candidates: 2,
            repairs: 3,
            timeout: 300.0,
            max_tokens: 16384,
            sandbox: None,
            sandbox_memory_mb: 32768,
            max_answer_kb: 512,
        }
    }
}

impl Settings {
    /// Whether a rule code is enabled by `select`/`ignore` (prefix match, ruff-style).
    pub fn enabled(&self, code: &str) -> bool {
        let matches = |s: &String| s == "ALL" || code.starts_with(s.as_str());
        let selected = self.select.is_empty() || self.select.iter().any(matches);
        selected && !self.ignore.iter().any(matches)
    }

    pub fn gpu(&self) -> &'static GpuSpec {
        gpu_by_name(&self.target_gpu).unwrap_or(&GPUS[0])
    }

    /// Reads settings from a JSON value (LSP options); unknown keys are an error.
    pub(crate) fn from_json(value: &serde_json::Value) -> Result<Settings, String> {
        let s: Settings = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
        s.validate().map_err(|e| e.to_string())?;
        Ok(s)
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if gpu_by_name(&self.target_gpu).is_none() {
            return Err(ConfigError::UnknownGpu(self.target_gpu.clone()));
        }
        if parse_target(&self.compile.target).is_none() {
            return Err(ConfigError::UnknownTarget(self.compile.target.clone()));
        }
        validate_selectors(&self.select, "select")?;
        validate_selectors(&self.ignore, "ignore")
    }

    /// Settings for a file: the nearest `kernel-lsp.toml`, or `pyproject.toml`
    /// with a `[tool.kernel-lsp]` table, walking up from `file`'s directory.
    /// Returns the settings and the file they came from.
    pub fn discover(file: &Path) -> Result<(Settings, Option<PathBuf>), ConfigError> {
        let start = if file.is_dir() { Some(file) } else { file.parent() };
        let mut dir = start;
        while let Some(d) = dir {
            let own = d.join("kernel-lsp.toml");
            if own.is_file() {
                return Ok((load_toml(&own, false)?, Some(own)));
            }
            let py = d.join("pyproject.toml");
            if py.is_file() {
                let text =
                    std::fs::read_to_string(&py).map_err(|source| ConfigError::Io { path: py.clone(), source })?;
                if text.contains("[tool.kernel-lsp") {
                    return Ok((load_toml(&py, true)?, Some(py)));
                }
            }
            dir = d.parent();
        }
        Ok((Settings::default(), None))
    }
}

fn load_toml(path: &Path, pyproject: bool) -> Result<Settings, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?;
    let invalid = |message: String| ConfigError::Invalid { path: path.to_path_buf(), message };
    let value: toml::Table = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
    let table = if pyproject {
        value.get("tool").and_then(|t| t.get("kernel-lsp")).cloned().unwrap_or(toml::Value::Table(Default::default()))
    } else {
        toml::Value::Table(value)
    };
    let mut settings: Settings = table.try_into().map_err(|e: toml::de::Error| invalid(e.to_string()))?;
    settings.validate().map_err(|e| invalid(e.to_string()))?;
    // A relative interpreter path is the config file's, not the current directory's;
    // a bare name (`python3`) is looked up on PATH.
    if let (Some(py), Some(dir)) = (&settings.python, path.parent()) {
        if py.contains('/') && Path::new(py).is_relative() {
            let dir =
                std::fs::canonicalize(dir).or_else(|_| std::path::absolute(dir)).unwrap_or_else(|_| dir.to_path_buf());
            settings.python = Some(dir.join(py).display().to_string());
        }
    }
    Ok(settings)
}

/// Per-block shared-memory limits (opt-in maximum, bytes) by GPU family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuSpec {
    pub key: &'static str,
    pub name: &'static str,
    /// Compute capability, e.g. 90.
    pub sm: u32,
    pub smem_per_block: u64,
    pub sm_count: u32,
}

pub const GPUS: &[GpuSpec] = &[
    GpuSpec { key: "h100", name: "NVIDIA H100 (sm_90)", sm: 90, smem_per_block: 232_448, sm_count: 132 },
    GpuSpec { key: "h200", name: "NVIDIA H200 (sm_90)", sm: 90, smem_per_block: 232_448, sm_count: 132 },
    GpuSpec { key: "a100", name: "NVIDIA A100 (sm_80)", sm: 80, smem_per_block: 166_912, sm_count: 108 },
    GpuSpec { key: "l4", name: "NVIDIA L4 (sm_89)", sm: 89, smem_per_block: 101_376, sm_count: 58 },
    GpuSpec { key: "rtx4090", name: "NVIDIA RTX 40xx (sm_89)", sm: 89, smem_per_block: 101_376, sm_count: 128 },
    GpuSpec { key: "rtx3090", name: "NVIDIA RTX 30xx / A10 (sm_86)", sm: 86, smem_per_block: 101_376, sm_count: 82 },
    GpuSpec { key: "v100", name: "NVIDIA V100 (sm_70)", sm: 70, smem_per_block: 98_304, sm_count: 80 },
    GpuSpec {
        key: "turing",
        name: "NVIDIA Turing: T4 / RTX 20xx / Quadro RTX (sm_75)",
        sm: 75,
        smem_per_block: 65_536,
        sm_count: 72,
    },
];

pub fn gpu_by_name(name: &str) -> Option<&'static GpuSpec> {
    let n = name.trim().to_ascii_lowercase().replace(['-', '_', ' '], "");
    let alias = match n.as_str() {
        "t4" | "rtx6000" | "quadrortx6000" | "rtx2080" | "sm75" => "turing",
        "a10" | "a6000" | "rtx3080" | "sm86" => "rtx3090",
        "rtx4080" | "l40" | "l40s" | "sm89" => "rtx4090",
        "sm90" | "h800" => "h100",
        "sm80" | "a800" => "a100",
        other => other,
    };
    GPUS.iter().find(|g| g.key == alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_codes_are_the_registry() {
        let registry: Vec<&str> = crate::rules::RULES.iter().map(|r| r.code).collect();
        assert_eq!(registry, RULE_CODES);
    }

    #[test]
    fn selectors_are_codes_prefixes_or_all() {
        for ok in ["KL001", "KL010", "KL00", "KL0", "KL", "K", "ALL"] {
            assert!(validate_selectors(&[ok.to_string()], "select").is_ok(), "{ok}");
        }
        for bad in ["BOGUS", "KL099", "KL9", "KL901", "kl001", "", "all", "E501"] {
            let err = validate_selectors(&["KL001".to_string(), bad.to_string()], "select").unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("unknown rule selector `{bad}` in `select`; valid: KL001, KL002")),
                "{err}"
            );
            assert!(err.contains("KL010"), "{err}");
        }
    }

    #[test]
    fn all_selects_every_rule() {
        let all = Settings { select: vec!["ALL".to_string()], ..Default::default() };
        assert!(RULE_CODES.iter().all(|c| all.enabled(c)));
        let none = Settings { ignore: vec!["ALL".to_string()], ..Default::default() };
        assert!(RULE_CODES.iter().all(|c| !none.enabled(c)));
        let prefix =
            Settings { select: vec!["KL00".to_string()], ignore: vec!["KL008".to_string()], ..Default::default() };
        assert!(prefix.enabled("KL001") && !prefix.enabled("KL008") && !prefix.enabled("KL010"));
    }

    #[test]
    fn an_unknown_code_in_a_config_file_names_the_file() {
        let dir = std::env::temp_dir().join(format!("kernel-lsp-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let path = dir.join("kernel-lsp.toml");
        std::fs::write(&path, "select = [\"BOGUS\"]\n").expect("write");
        let err = Settings::discover(&dir.join("k.py")).unwrap_err().to_string();
        assert!(err.contains("kernel-lsp.toml") && err.contains("unknown rule selector `BOGUS` in `select`"), "{err}");
        std::fs::remove_file(&path).expect("rm");
        std::fs::write(dir.join("pyproject.toml"), "[tool.kernel-lsp]\nignore = [\"KL0011\"]\n").expect("write");
        let err = Settings::discover(&dir.join("k.py")).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).ok();
        assert!(err.contains("pyproject.toml") && err.contains("`KL0011` in `ignore`"), "{err}");
    }

    #[test]
    fn lsp_settings_refuse_an_unknown_code() {
        let err = Settings::from_json(&serde_json::json!({"select": ["KL01"], "ignore": ["KL0X"]})).unwrap_err();
        assert!(err.contains("`KL0X` in `ignore`"), "{err}");
    }
}
