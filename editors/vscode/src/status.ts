/**
 * What the status-bar item says: the server's state and the last measured
 * speedup of the file in the editor. Pure and unit-tested.
 */

export type ServerState = 'starting' | 'running' | 'stopped' | 'error' | 'not-found';

export interface Measurement {
    /** Times faster than the PyTorch reference; undefined when not timed. */
    speedup?: number;
    correct?: boolean;
    /** Measured on Triton's CPU interpreter: correctness only, never a speedup. */
    cpu: boolean;
    /** The harness's error kind (`mismatch`, `compile-error`, ...). */
    error?: string;
    /** The file changed since it was measured. */
    stale?: boolean;
}

/** Reads the `kernel-lsp.benchmark` command's result (the harness's BenchResult). */
export function measurementFromResult(result: unknown): Measurement | undefined {
    if (typeof result !== 'object' || result === null) {
        return undefined;
    }
    const r = result as Record<string, unknown>;
    const error = r.error as Record<string, unknown> | null | undefined;
    return {
        speedup: typeof r.speedup === 'number' && Number.isFinite(r.speedup) ? r.speedup : undefined,
        correct: typeof r.correct === 'boolean' ? r.correct : undefined,
        cpu: r.mode === 'cpu-interpreter',
        error: error && typeof error.kind === 'string' ? error.kind : undefined,
    };
}

/**
 * Reads the server's `ModelNew` code-lens title, e.g.
 * `1.62x vs PyTorch · 29.9 ms vs 48.4 ms · correct · 6 launches · ↻` or
 * `correct (CPU interpreter, no timing) · ↻`. Undefined for a lens that shows
 * no result (`▶ Benchmark vs reference`, `Benchmarking…`).
 */
export function measurementFromLensTitle(title: string): Measurement | undefined {
    if (/^\s*▶|Benchmarking…|Benchmark vs reference/.test(title)) {
        return undefined;
    }
    const parts = title.split('·').map((p) => p.trim());
    const m: Measurement = { cpu: /CPU interpreter/.test(title) };
    const speed = /^(\d+(?:\.\d+)?)x vs PyTorch/.exec(parts[0] ?? '');
    if (speed) {
        m.speedup = Number(speed[1]);
    }
    if (/\bINCORRECT\b/.test(title)) {
        m.correct = false;
    } else if (/(^|\s)correct\b/.test(title)) {
        m.correct = true;
    }
    if (/before your last edits/.test(title)) {
        m.stale = true;
    }
    const known = /^(compile-error|out-of-resources|mismatch|nondeterministic|timeout|exception|no-reference|missing-dependency|harness)$/;
    const err = parts.find((p) => known.test(p));
    if (err) {
        m.error = err;
    }
    if (m.speedup === undefined && m.correct === undefined && m.error === undefined) {
        return undefined;
    }
    return m;
}

/** `1.6187` -> `1.62×`; large speedups lose decimals. */
export function formatSpeedup(x: number): string {
    if (x >= 100) {
        return `${Math.round(x)}×`;
    }
    if (x >= 10) {
        return `${x.toFixed(1)}×`;
    }
    return `${x.toFixed(2)}×`;
}

export interface StatusInput {
    state: ServerState;
    benchmarking?: boolean;
    measurement?: Measurement;
}

export interface StatusView {
    text: string;
    tooltip: string;
    /** `error` / `warning` background, or none. */
    background?: 'error' | 'warning';
}

const ICONS: Record<ServerState, string> = {
    starting: '$(sync~spin)',
    running: '$(zap)',
    stopped: '$(circle-slash)',
    error: '$(error)',
    'not-found': '$(warning)',
};

const STATE_TEXT: Record<ServerState, string> = {
    starting: 'kernel-lsp is starting',
    running: 'kernel-lsp is running',
    stopped: 'kernel-lsp is stopped',
    error: 'kernel-lsp stopped with an error (see the logs)',
    'not-found': 'the kernel-lsp binary was not found (set kernelLsp.path)',
};

export function formatStatus(input: StatusInput): StatusView {
    const lines = [STATE_TEXT[input.state]];
    let text = `${ICONS[input.state]} kernel-lsp`;
    let background: StatusView['background'];
    if (input.state === 'error' || input.state === 'not-found') {
        background = 'error';
    }
    if (input.benchmarking) {
        text = '$(sync~spin) kernel-lsp: benchmarking…';
        lines.push('A benchmark of this file is running.');
    } else if (input.measurement && input.state === 'running') {
        const m = input.measurement;
        const stale = m.stale ? ' (before your last edits)' : '';
        if (m.error !== undefined && m.speedup === undefined) {
            text += ` $(error) ${m.error}`;
            lines.push(`Last benchmark: ${m.error}${stale}.`);
            background = 'warning';
        } else if (m.correct === false) {
            const speed = m.speedup !== undefined ? ` ${formatSpeedup(m.speedup)}` : '';
            text += `${speed} $(error) incorrect`;
            lines.push(`Last benchmark: results differ from the reference${stale}.`);
            background = 'warning';
        } else if (m.cpu) {
            text += m.correct ? ' $(check) CPU' : ' CPU';
            lines.push(
                `Last benchmark: ${m.correct ? 'correct' : 'correctness unknown'} on the CPU interpreter (no timing)${stale}.`,
            );
        } else if (m.speedup !== undefined) {
            text += ` ${formatSpeedup(m.speedup)}`;
            lines.push(`Last benchmark: ${formatSpeedup(m.speedup)} vs the PyTorch reference${m.correct ? ', correct' : ''}${stale}.`);
        }
        if (stale) {
            text += '*';
        }
    }
    lines.push('Click for kernel-lsp commands.');
    return { text, tooltip: lines.join('\n'), background };
}
