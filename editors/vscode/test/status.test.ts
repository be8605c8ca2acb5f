import * as assert from 'assert';
import { formatSpeedup, formatStatus, measurementFromLensTitle, measurementFromResult } from '../src/status';

describe('status formatting', () => {
    it('reads the benchmark command result', () => {
        assert.deepStrictEqual(
            measurementFromResult({ mode: 'gpu', correct: true, speedup: 1.6187, ref_ms: 48.4, new_ms: 29.9, error: null }),
            { speedup: 1.6187, correct: true, cpu: false, error: undefined },
        );
        assert.deepStrictEqual(
            measurementFromResult({ mode: 'cpu-interpreter', correct: true, speedup: null }),
            { speedup: undefined, correct: true, cpu: true, error: undefined },
        );
        assert.deepStrictEqual(
            measurementFromResult({ mode: 'none', correct: null, error: { kind: 'compile-error', message: 'x' } }),
            { speedup: undefined, correct: undefined, cpu: false, error: 'compile-error' },
        );
        assert.strictEqual(measurementFromResult(null), undefined);
        assert.strictEqual(measurementFromResult('x'), undefined);
    });

    it('reads the server code-lens titles', () => {
        assert.deepStrictEqual(measurementFromLensTitle('1.62x vs PyTorch · 29.9 ms vs 48.4 ms · correct · 6 launches · ↻'), {
            cpu: false,
            speedup: 1.62,
            correct: true,
        });
        assert.deepStrictEqual(measurementFromLensTitle('correct (CPU interpreter, no timing) (before your last edits) · ↻'), {
            cpu: true,
            correct: true,
            stale: true,
        });
        assert.deepStrictEqual(measurementFromLensTitle('0.80x vs PyTorch · 60.0 ms vs 48.0 ms · INCORRECT · mismatch · ↻'), {
            cpu: false,
            speedup: 0.8,
            correct: false,
            error: 'mismatch',
        });
        assert.deepStrictEqual(measurementFromLensTitle('correctness unknown · compile-error · ↻'), { cpu: false, error: 'compile-error' });
        assert.strictEqual(measurementFromLensTitle('▶ Benchmark vs reference'), undefined);
        assert.strictEqual(measurementFromLensTitle('Benchmarking… (run again to restart)'), undefined);
    });

    it('formats speedups', () => {
        assert.strictEqual(formatSpeedup(1.6187), '1.62×');
        assert.strictEqual(formatSpeedup(0.5), '0.50×');
        assert.strictEqual(formatSpeedup(12.34), '12.3×');
        assert.strictEqual(formatSpeedup(250.4), '250×');
    });

    it('shows the server state and the last speedup', () => {
        assert.strictEqual(formatStatus({ state: 'starting' }).text, '$(sync~spin) kernel-lsp');
        assert.strictEqual(formatStatus({ state: 'running' }).text, '$(zap) kernel-lsp');
        const fast = formatStatus({ state: 'running', measurement: { speedup: 1.6187, correct: true, cpu: false } });
        assert.strictEqual(fast.text, '$(zap) kernel-lsp 1.62×');
        assert.match(fast.tooltip, /Last benchmark: 1\.62× vs the PyTorch reference, correct\./);
        assert.strictEqual(fast.background, undefined);
        const stale = formatStatus({ state: 'running', measurement: { speedup: 2, correct: true, cpu: false, stale: true } });
        assert.strictEqual(stale.text, '$(zap) kernel-lsp 2.00×*');
        assert.match(stale.tooltip, /before your last edits/);
    });

    it('flags wrong results, errors and CPU-only runs', () => {
        const wrong = formatStatus({ state: 'running', measurement: { speedup: 3, correct: false, cpu: false, error: 'mismatch' } });
        assert.strictEqual(wrong.text, '$(zap) kernel-lsp 3.00× $(error) incorrect');
        assert.strictEqual(wrong.background, 'warning');
        const failed = formatStatus({ state: 'running', measurement: { cpu: false, error: 'compile-error' } });
        assert.strictEqual(failed.text, '$(zap) kernel-lsp $(error) compile-error');
        const cpu = formatStatus({ state: 'running', measurement: { cpu: true, correct: true } });
        assert.strictEqual(cpu.text, '$(zap) kernel-lsp $(check) CPU');
        assert.match(cpu.tooltip, /CPU interpreter \(no timing\)/);
    });

    it('shows a running benchmark and server problems', () => {
        assert.strictEqual(formatStatus({ state: 'running', benchmarking: true, measurement: { speedup: 1, cpu: false } }).text, '$(sync~spin) kernel-lsp: benchmarking…');
        const missing = formatStatus({ state: 'not-found' });
        assert.strictEqual(missing.background, 'error');
        assert.match(missing.tooltip, /kernelLsp\.path/);
        assert.strictEqual(formatStatus({ state: 'error', measurement: { speedup: 2, cpu: false } }).text, '$(error) kernel-lsp');
    });
});
