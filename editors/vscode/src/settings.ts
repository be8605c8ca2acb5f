/**
 * VS Code settings (`kernelLsp.*`, camelCase) -> the server's configuration
 * (kebab-case, nested like `kernel-lsp.toml`). Pure and unit-tested.
 *
 * Only settings the user set explicitly are sent: the server lays the
 * editor's keys over the project's `kernel-lsp.toml` / `[tool.kernel-lsp]`
 * key by key, so sending VS Code's defaults would override the project file.
 */
import { expandPath } from './discovery';

export type SettingKind = 'string' | 'path' | 'codes' | 'number' | 'positive' | 'count';

export interface SettingSpec {
    /** The key under `kernelLsp.`, e.g. `bench.correctnessTrials`. */
    key: string;
    kind: SettingKind;
}

/** Every `kernelLsp.*` setting that the server reads, in the order the README lists them. */
export const SERVER_SETTINGS: readonly SettingSpec[] = [
    { key: 'select', kind: 'codes' },
    { key: 'ignore', kind: 'codes' },
    { key: 'targetGpu', kind: 'string' },
    { key: 'python', kind: 'path' },
    { key: 'reference', kind: 'path' },
    { key: 'atol', kind: 'number' },
    { key: 'rtol', kind: 'number' },
    { key: 'bench.warmup', kind: 'count' },
    { key: 'bench.repeats', kind: 'count' },
    { key: 'bench.timeout', kind: 'positive' },
    { key: 'bench.correctnessTrials', kind: 'count' },
    { key: 'bench.tolerance', kind: 'string' },
    { key: 'bench.precision', kind: 'string' },
    { key: 'llm.baseUrl', kind: 'string' },
    { key: 'llm.model', kind: 'string' },
    { key: 'llm.apiKeyEnv', kind: 'string' },
    { key: 'llm.candidates', kind: 'count' },
    { key: 'llm.repairs', kind: 'count' },
    { key: 'llm.timeout', kind: 'positive' },
    { key: 'llm.maxTokens', kind: 'count' },
    { key: 'llm.sandbox', kind: 'string' },
    { key: 'promptsDir', kind: 'path' },
];

/** `correctnessTrials` -> `correctness-trials`, `targetGpu` -> `target-gpu`. */
export function kebab(segment: string): string {
    return segment.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/** `bench.correctnessTrials` -> `['bench', 'correctness-trials']`. */
export function serverPath(key: string): string[] {
    return key.split('.').map(kebab);
}

export interface MappingContext {
    platform: NodeJS.Platform;
    home?: string;
    workspaceFolder?: string;
}

export interface ServerSettings {
    settings: Record<string, unknown>;
    /** Values that were not sent, and why (shown to the user once). */
    problems: string[];
}

/**
 * Builds the object sent as `initializationOptions` and, under a `kernel-lsp`
 * key, in `workspace/didChangeConfiguration`. `get` returns the value the user
 * set for a key, or undefined when it is unset.
 */
export function toServerSettings(get: (key: string) => unknown, ctx: MappingContext): ServerSettings {
    const settings: Record<string, unknown> = {};
    const problems: string[] = [];
    for (const spec of SERVER_SETTINGS) {
        const raw = get(spec.key);
        if (raw === undefined || raw === null) {
            continue;
        }
        const converted = convert(spec, raw, ctx);
        if ('problem' in converted) {
            problems.push(`kernelLsp.${spec.key}: ${converted.problem}`);
            continue;
        }
        if (converted.value === undefined) {
            continue;
        }
        const keys = serverPath(spec.key);
        let target = settings;
        for (const k of keys.slice(0, -1)) {
            target = (target[k] ??= {}) as Record<string, unknown>;
        }
        target[keys[keys.length - 1]] = converted.value;
    }
    return { settings, problems };
}

type Converted = { value: unknown } | { problem: string };

function convert(spec: SettingSpec, raw: unknown, ctx: MappingContext): Converted {
    switch (spec.kind) {
        case 'string':
        case 'path': {
            if (typeof raw !== 'string') {
                return { problem: `expected a string, got ${JSON.stringify(raw)}` };
            }
            const s = raw.trim();
            if (s === '') {
                return { value: undefined };
            }
            return { value: spec.kind === 'path' ? expandPath(s, ctx) : s };
        }
        case 'codes': {
            const list = typeof raw === 'string' ? raw.split(',') : raw;
            if (!Array.isArray(list) || !list.every((c) => typeof c === 'string')) {
                return { problem: `expected a list of rule codes, got ${JSON.stringify(raw)}` };
            }
            return { value: list.map((c: string) => c.trim().toUpperCase()).filter((c) => c !== '') };
        }
        case 'number':
        case 'positive':
        case 'count': {
            const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
            if (typeof n !== 'number' || !Number.isFinite(n)) {
                return { problem: `expected a number, got ${JSON.stringify(raw)}` };
            }
            if (spec.kind === 'count' && (!Number.isInteger(n) || n < 0 || n > 0xffffffff)) {
                return { problem: `expected a whole number >= 0, got ${n}` };
            }
            if (spec.kind === 'positive' && n <= 0) {
                return { problem: `expected a number > 0, got ${n}` };
            }
            if (spec.kind === 'number' && n < 0) {
                return { problem: `expected a number >= 0, got ${n}` };
            }
            return { value: n };
        }
    }
}

/** The payload of `workspace/didChangeConfiguration` (and the answer to `workspace/configuration` for `kernel-lsp`). */
export function configurationPayload(settings: Record<string, unknown>): { 'kernel-lsp': Record<string, unknown> } {
    return { 'kernel-lsp': settings };
}
