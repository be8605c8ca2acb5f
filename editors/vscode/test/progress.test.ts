import * as assert from 'assert';
import { newToken, noResultNotice, ProgressDeps, ProgressValue, Run, runWithProgress } from '../src/progress';

/** A stand-in for VS Code's progress notification and the language client. */
class Fake implements ProgressDeps {
    titles: string[] = [];
    reports: string[] = [];
    cancels: string[] = [];
    open = false;
    closed = false;
    private listeners = new Map<string, (v: ProgressValue) => void>();
    private cancelListener: (() => void) | undefined;

    async withProgress<T>(
        title: string,
        task: (report: (message: string) => void, onCancel: (listener: () => void) => void) => Promise<T>,
    ): Promise<T> {
        this.titles.push(title);
        this.open = true;
        try {
            return await task(
                (m) => this.reports.push(m),
                (l) => (this.cancelListener = l),
            );
        } finally {
            this.open = false;
            this.closed = true;
        }
    }

    onProgress(token: string, listener: (value: ProgressValue) => void): { dispose(): void } {
        this.listeners.set(token, listener);
        return { dispose: () => this.listeners.delete(token) };
    }

    cancel(token: string): void {
        this.cancels.push(token);
    }

    /** The server's `$/progress`. */
    progress(token: string, value: ProgressValue): void {
        this.listeners.get(token)?.(value);
    }

    /** The user presses Cancel on the notification. */
    pressCancel(): void {
        assert.ok(this.open, 'Cancel pressed on a closed notification');
        assert.ok(this.cancelListener, 'the notification has a Cancel handler');
        this.cancelListener();
    }

    subscribed(token: string): boolean {
        return this.listeners.has(token);
    }
}

/** A request the test answers by hand. */
function deferred(): { promise: Promise<unknown>; resolve: (v: unknown) => void; reject: (e: unknown) => void } {
    let resolve!: (v: unknown) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<unknown>((res, rej) => {
        resolve = res;
        reject = rej;
    });
    return { promise, resolve, reject };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('benchmark and rewrite progress with a Cancel button', () => {
    it('sends its own token as the workDoneToken, shows the server progress, and Cancel sends window/workDoneProgress/cancel for that token', async () => {
        const fake = new Fake();
        const request = deferred();
        const sentWith: string[] = [];
        const token = newToken('benchmark');
        const running = runWithProgress(fake, 'kernel-lsp: Benchmark k.py', token, (t) => {
            sentWith.push(t);
            // The subscription is in place before the request goes out.
            assert.ok(fake.subscribed(t), 'subscribed to $/progress before sending');
            return request.promise;
        });
        await tick();
        assert.deepStrictEqual(sentWith, [token]);
        assert.deepStrictEqual(fake.titles, ['kernel-lsp: Benchmark k.py']);
        assert.ok(fake.open, 'the notification shows while the run goes on');

        fake.progress(token, { kind: 'begin', title: 'Benchmark vs reference', message: 'k.py', cancellable: true });
        fake.progress(token, { kind: 'report', message: 'correctness 1/5' });
        fake.progress('someone-else', { kind: 'report', message: 'not ours' });
        assert.deepStrictEqual(fake.reports, ['k.py', 'correctness 1/5']);

        fake.pressCancel();
        fake.pressCancel(); // twice: one cancel notification
        assert.deepStrictEqual(fake.cancels, [token]);

        fake.progress(token, { kind: 'end', message: 'cancelled' });
        request.reject({ code: -32800, message: 'benchmark cancelled' });
        const run = await running;
        assert.ok(fake.closed);
        assert.strictEqual(run.cancelled, true);
        assert.deepStrictEqual(run.outcome, { kind: 'error', error: { code: -32800, message: 'benchmark cancelled' } });
        assert.deepStrictEqual(run.progress.map((p) => p.kind), ['begin', 'report', 'end']);
        assert.ok(!fake.subscribed(token), 'unsubscribed');
        assert.strictEqual(noResultNotice('benchmark', run, () => false), 'kernel-lsp: benchmark cancelled; no result.');
    });

    it('a progress message sent before the notification opened is shown when it does', async () => {
        const fake = new Fake();
        const token = newToken('benchmark');
        const slow: ProgressDeps = {
            withProgress: async (title, task) => {
                // The server's begin arrives before VS Code runs the task.
                fake.progress(token, { kind: 'begin', title: 'Benchmark', message: 'early' });
                return fake.withProgress(title, task);
            },
            onProgress: (t, l) => fake.onProgress(t, l),
            cancel: (t) => fake.cancel(t),
        };
        const run = await runWithProgress(slow, 't', token, () => Promise.resolve({ correct: true }));
        assert.deepStrictEqual(fake.reports, ['early']);
        assert.deepStrictEqual(run.outcome, { kind: 'result', value: { correct: true } });
        assert.strictEqual(run.cancelled, false);
        assert.strictEqual(noResultNotice('benchmark', run, () => false), undefined, 'a result needs no notice');
    });

    it('closes the notification when the server ends the progress, while the request still waits (a rewrite in the Refactor Preview)', async () => {
        const fake = new Fake();
        const request = deferred();
        const token = newToken('rewrite');
        const running = runWithProgress(fake, 'kernel-lsp: Make Persistent', token, () => request.promise);
        await tick();
        assert.ok(fake.open);
        fake.progress(token, { kind: 'end', message: 'persistent: 1.8x' });
        await tick();
        assert.ok(fake.closed, 'closed at the end of the progress');
        request.resolve({ applied: true });
        const run = await running;
        assert.deepStrictEqual(run.outcome, { kind: 'result', value: { applied: true } });
    });

    it('tokens are unique', () => {
        const tokens = new Set(Array.from({ length: 100 }, () => newToken('benchmark')));
        assert.strictEqual(tokens.size, 100);
    });
});

describe('a run that ends without a result says so', () => {
    const run = (outcome: Run['outcome'], cancelled = false): Run => ({ outcome, cancelled, progress: [] });

    it('cancelled, by the user or by the server', () => {
        assert.strictEqual(noResultNotice('benchmark', run({ kind: 'error', error: { code: -32800, message: 'x' } }), () => false), 'kernel-lsp: benchmark cancelled; no result.');
        assert.strictEqual(noResultNotice('Make Persistent', run({ kind: 'error', error: new Error('gone') }, true), () => false), 'kernel-lsp: Make Persistent cancelled; no result.');
    });

    it('the server stopped before answering', () => {
        assert.strictEqual(
            noResultNotice('benchmark', run({ kind: 'error', error: { code: -32097, message: 'Connection got disposed.' } }), () => true),
            'kernel-lsp: benchmark ended without a result: the server stopped (Connection got disposed.).',
        );
        assert.match(noResultNotice('benchmark', run({ kind: 'error', error: { code: -32096, message: 'inactive' } }), () => true) ?? '', /server stopped/);
    });

    it('an empty answer', () => {
        assert.strictEqual(noResultNotice('benchmark', run({ kind: 'result', value: null }), () => false), 'kernel-lsp: benchmark ended without a result.');
    });

    it('a failure: shown unless the server already showed it', () => {
        const failed = run({ kind: 'error', error: { code: -32803, message: 'a benchmark of this file is already running' } });
        assert.strictEqual(noResultNotice('benchmark', failed, () => false), 'kernel-lsp benchmark: a benchmark of this file is already running');
        assert.strictEqual(noResultNotice('benchmark', failed, () => true), undefined);
    });
});
