/**
 * Protocol test: the real `kernel-lsp serve` binary, driven over stdio with
 * vscode-languageclient's own JSON-RPC stack (vscode-jsonrpc /
 * vscode-languageserver-protocol) and the client capabilities that
 * vscode-languageclient computes, the way VS Code drives it.
 *
 * The binary: $KERNEL_LSP_BIN, else `debug/kernel-lsp` under
 * $CARGO_TARGET_DIR or the repository's `target/`; built with cargo when
 * missing.
 */
import * as assert from 'assert';
import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { pathToFileURL } from 'url';
import {
    ClientCapabilities,
    CodeAction,
    CodeActionRequest,
    CodeLensRequest,
    Command,
    CompletionItem,
    CompletionRequest,
    ConfigurationRequest,
    createProtocolConnection,
    Diagnostic,
    DidChangeConfigurationNotification,
    DidChangeTextDocumentNotification,
    DidCloseTextDocumentNotification,
    DefinitionRequest,
    DidOpenTextDocumentNotification,
    DocumentDiagnosticReport,
    DocumentDiagnosticRequest,
    DocumentSymbol,
    DocumentSymbolRequest,
    Location,
    ReferencesRequest,
    ExecuteCommandRequest,
    ExitNotification,
    HoverRequest,
    MarkupContent,
    InitializedNotification,
    InitializeRequest,
    InitializeResult,
    ProtocolConnection,
    PublishDiagnosticsNotification,
    PublishDiagnosticsParams,
    RegistrationRequest,
    ResponseError,
    ShowMessageNotification,
    ShowMessageParams,
    ShutdownRequest,
    SignatureHelp,
    SignatureHelpRequest,
    StreamMessageReader,
    StreamMessageWriter,
    TextEdit,
    WorkDoneProgress,
    WorkDoneProgressBegin,
    WorkDoneProgressCancelNotification,
    WorkDoneProgressCreateRequest,
    WorkDoneProgressEnd,
    WorkDoneProgressReport,
    LSPErrorCodes,
} from 'vscode-languageserver-protocol/node';

import { newToken } from '../src/progress';
import { configurationPayload, toServerSettings } from '../src/settings';
import { measurementFromLensTitle } from '../src/status';
import { vscodeClientCapabilities } from './vscodeCapabilities';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');

/** An interpreter with torch + triton for a real benchmark: $KERNEL_LSP_TEST_PYTHON, else the repository's .venv. */
function testPython(): string | undefined {
    const candidates = [process.env.KERNEL_LSP_TEST_PYTHON, path.join(REPO, '.venv', 'bin', 'python')];
    return candidates.find((p): p is string => typeof p === 'string' && p.length > 0 && fs.existsSync(p));
}

function serverBinary(): string {
    const exe = process.platform === 'win32' ? 'kernel-lsp.exe' : 'kernel-lsp';
    if (process.env.KERNEL_LSP_BIN) {
        return process.env.KERNEL_LSP_BIN;
    }
    const targetDir = process.env.CARGO_TARGET_DIR ? path.resolve(REPO, process.env.CARGO_TARGET_DIR) : path.join(REPO, 'target');
    const bin = path.join(targetDir, 'debug', exe);
    if (!fs.existsSync(bin)) {
        // Not built yet: build it the way scripts/test.sh does.
        cp.execFileSync('cargo', ['build', '-p', 'kernel-lsp'], { cwd: REPO, stdio: 'inherit' });
    }
    return bin;
}

/** The KL005 + KL004 fixture of the server's own end-to-end tests. */
const KERNEL = `import triton
import triton.language as tl

@triton.jit
def act(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)


@triton.jit
def fill(x_ptr, H):
    offs = tl.arange(0, H)
    tl.store(x_ptr + offs, offs)


class ModelNew:
    def forward(self, x, y):
        act[(4,)](x, y, x.numel(), BLOCK=128)
        return y
`;

/** Applies LSP text edits (UTF-16 positions, like JavaScript strings) to a text. */
function applyEdits(text: string, edits: TextEdit[]): string {
    const lineStarts = [0];
    for (let i = 0; i < text.length; i++) {
        if (text[i] === '\n') {
            lineStarts.push(i + 1);
        }
    }
    const offset = (p: { line: number; character: number }) => lineStarts[p.line] + p.character;
    const sorted = [...edits].sort((a, b) => offset(b.range.start) - offset(a.range.start));
    for (const e of sorted) {
        text = text.slice(0, offset(e.range.start)) + e.newText + text.slice(offset(e.range.end));
    }
    return text;
}

function codes(diags: Diagnostic[]): string[] {
    return diags.map((d) => String(d.code));
}

/** One editor session against the server. */
class Session {
    readonly conn: ProtocolConnection;
    readonly proc: cp.ChildProcess;
    readonly messages: ShowMessageParams[] = [];
    readonly published: PublishDiagnosticsParams[] = [];
    readonly stderr: string[] = [];
    /** Tokens the server asked to create (window/workDoneProgress/create). */
    readonly created: unknown[] = [];
    private waiters: (() => void)[] = [];
    configuration: Record<string, unknown> = {};

    constructor(bin: string) {
        this.proc = cp.spawn(bin, ['serve'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, RUST_LOG: 'warn' } });
        this.proc.stderr!.on('data', (d: Buffer) => this.stderr.push(d.toString()));
        this.conn = createProtocolConnection(new StreamMessageReader(this.proc.stdout!), new StreamMessageWriter(this.proc.stdin!));
        // What vscode-languageclient answers to the server's own requests.
        this.conn.onRequest(RegistrationRequest.type, () => null);
        this.conn.onRequest(WorkDoneProgressCreateRequest.type, (params) => {
            this.created.push(params.token);
            return null;
        });
        this.conn.onRequest('workspace/codeLens/refresh', () => null);
        this.conn.onRequest('workspace/inlayHint/refresh', () => null);
        this.conn.onRequest('workspace/diagnostic/refresh', () => null);
        this.conn.onRequest(ConfigurationRequest.type, (params) =>
            params.items.map((i) => (i.section === 'kernel-lsp' ? this.configuration : null)),
        );
        this.conn.onNotification(ShowMessageNotification.type, (m) => {
            this.messages.push(m);
            this.wake();
        });
        this.conn.onNotification(PublishDiagnosticsNotification.type, (p) => {
            this.published.push(p);
            this.wake();
        });
        this.conn.listen();
    }

    wake(): void {
        const w = this.waiters;
        this.waiters = [];
        w.forEach((f) => f());
    }

    /** Waits until `pred` holds, re-checking on every notification. */
    async until<T>(what: string, pred: () => T | undefined, ms = 10000): Promise<T> {
        const deadline = Date.now() + ms;
        for (;;) {
            const v = pred();
            if (v !== undefined) {
                return v;
            }
            const left = deadline - Date.now();
            if (left <= 0) {
                throw new Error(`timed out waiting for ${what}; stderr:\n${this.stderr.join('')}`);
            }
            await new Promise<void>((resolve) => {
                const t = setTimeout(resolve, Math.min(left, 200));
                this.waiters.push(() => {
                    clearTimeout(t);
                    resolve();
                });
            });
        }
    }

    initialize(capabilities: ClientCapabilities, root: string, initializationOptions: unknown): Promise<InitializeResult> {
        const rootUri = pathToFileURL(root).toString();
        return this.conn.sendRequest(InitializeRequest.type, {
            processId: process.pid,
            clientInfo: { name: 'Visual Studio Code', version: '1.82.0' },
            locale: 'en',
            rootPath: root,
            rootUri,
            capabilities,
            initializationOptions,
            trace: 'off',
            workspaceFolders: [{ uri: rootUri, name: path.basename(root) }],
        });
    }

    async shutdown(): Promise<number | null> {
        const exited = new Promise<number | null>((resolve) => this.proc.on('exit', (code) => resolve(code)));
        await this.conn.sendRequest(ShutdownRequest.type);
        await this.conn.sendNotification(ExitNotification.type);
        const code = await exited;
        this.conn.dispose();
        return code;
    }

    kill(): void {
        if (this.proc.exitCode === null) {
            this.proc.kill();
        }
        this.conn.dispose();
    }
}

describe('protocol: the real server, spoken to like VS Code', function () {
    this.timeout(600_000); // the first run may build the binary
    let bin: string;
    let dir: string;
    let file: string;
    let uri: string;
    let session: Session | undefined;

    before(() => {
        bin = serverBinary();
        assert.ok(fs.existsSync(bin), `no server binary at ${bin}`);
        dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kernel-lsp-vscode-'));
        file = path.join(dir, 'act.py');
        fs.writeFileSync(file, KERNEL);
        uri = pathToFileURL(file).toString();
    });

    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    afterEach(() => {
        session?.kill();
        session = undefined;
    });

    async function open(caps: ClientCapabilities, initializationOptions: unknown = {}): Promise<{ s: Session; init: InitializeResult }> {
        const s = new Session(bin);
        session = s;
        const init = await s.initialize(caps, dir, initializationOptions);
        await s.conn.sendNotification(InitializedNotification.type, {});
        await s.conn.sendNotification(DidOpenTextDocumentNotification.type, {
            textDocument: { uri, languageId: 'python', version: 1, text: KERNEL },
        });
        return { s, init };
    }

    async function pull(s: Session): Promise<Diagnostic[]> {
        const report: DocumentDiagnosticReport = await s.conn.sendRequest(DocumentDiagnosticRequest.type, {
            textDocument: { uri },
            identifier: 'kernel-lsp',
        });
        assert.strictEqual(report.kind, 'full');
        return report.kind === 'full' ? report.items : [];
    }

    /** Asks for the code actions at the KL005 diagnostic, as VS Code does with the lightbulb. */
    async function quickFix(s: Session, kl005: Diagnostic): Promise<CodeAction> {
        const actions = await s.conn.sendRequest(CodeActionRequest.type, {
            textDocument: { uri },
            range: kl005.range,
            context: { diagnostics: [kl005], triggerKind: 1 },
        });
        assert.ok(actions, 'no code actions');
        const fix = actions.find((a): a is CodeAction => !Command.is(a) && a.kind === 'quickfix' && a.edit !== undefined);
        assert.ok(fix, `no quick fix in ${JSON.stringify(actions)}`);
        assert.ok(
            actions.some((a) => a.title === 'Explain KL005'),
            'an "Explain KL005" action',
        );
        return fix;
    }

    function checkTanhFix(fix: CodeAction, kl005: Diagnostic): string {
        const edits = fix.edit?.changes?.[uri] ?? [];
        assert.strictEqual(edits.length, 1, JSON.stringify(fix.edit));
        const lines = KERNEL.split('\n');
        const line = lines[edits[0].range.start.line];
        assert.strictEqual(line.slice(edits[0].range.start.character, edits[0].range.end.character), 'tl.tanh(x)');
        assert.deepStrictEqual(edits[0].range.start, kl005.range.start, 'the edit starts where the diagnostic does');
        assert.strictEqual(edits[0].newText, '(2 * tl.sigmoid(2 * x) - 1)');
        const fixed = applyEdits(KERNEL, edits);
        assert.match(fixed, /tl\.store\(y_ptr \+ offs, \(2 \* tl\.sigmoid\(2 \* x\) - 1\), mask=offs < n\)/);
        return fixed;
    }

    /** VS Code sends incremental changes with a range and its length. */
    async function change(s: Session, fix: CodeAction, version: number): Promise<void> {
        const e = fix.edit!.changes![uri][0];
        const lines = KERNEL.split('\n');
        const rangeLength = e.range.end.character - e.range.start.character;
        assert.strictEqual(e.range.start.line, e.range.end.line);
        assert.ok(lines[e.range.start.line].length >= e.range.end.character);
        await s.conn.sendNotification(DidChangeTextDocumentNotification.type, {
            textDocument: { uri, version },
            contentChanges: [{ range: e.range, rangeLength, text: e.newText }],
        });
    }

    it('pull diagnostics (VS Code capabilities): KL005 and KL004, the tanh quick fix, and KL005 gone after the edit', async () => {
        const caps = vscodeClientCapabilities();
        assert.ok(caps.textDocument?.diagnostic, 'vscode-languageclient 9 pulls diagnostics');
        const { s, init } = await open(caps, toServerSettings(() => undefined, { platform: process.platform }).settings);
        assert.strictEqual(init.capabilities.positionEncoding ?? 'utf-16', 'utf-16');
        assert.ok(init.capabilities.diagnosticProvider, 'the server offers pull diagnostics to a pulling client');
        for (const c of ['kernel-lsp.benchmark', 'kernel-lsp.rewrite', 'kernel-lsp.history', 'kernel-lsp.timeline', 'kernel-lsp.explain', 'kernel-lsp.fixAll']) {
            assert.ok(init.capabilities.executeCommandProvider?.commands.includes(c), `${c} is offered`);
        }

        const diags = await pull(s);
        assert.deepStrictEqual(codes(diags).sort(), ['KL004', 'KL005']);
        const kl005 = diags.find((d) => d.code === 'KL005')!;
        assert.strictEqual(kl005.source, 'kernel-lsp');
        assert.strictEqual(kl005.severity, 1);

        const fix = await quickFix(s, kl005);
        checkTanhFix(fix, kl005);
        await change(s, fix, 2);
        const after = await pull(s);
        assert.deepStrictEqual(codes(after), ['KL004']);
        assert.strictEqual(s.messages.filter((m) => m.type === 1).length, 0, JSON.stringify(s.messages));
        assert.strictEqual(await s.shutdown(), 0);
    });

    it('navigation: go to definition from a launch and from BLOCK=, references, document symbols', async () => {
        const { s, init } = await open(vscodeClientCapabilities());
        assert.ok(init.capabilities.definitionProvider, 'definition offered');
        assert.ok(init.capabilities.referencesProvider, 'references offered');
        assert.ok(init.capabilities.documentSymbolProvider, 'document symbols offered');
        const lines = KERNEL.split('\n');
        const launch = lines.findIndex((l) => l.includes('act[(4,)]'));
        const def = lines.findIndex((l) => l.startsWith('def act('));
        const at = (line: number, needle: string, skip = 0) => ({ line, character: lines[line].indexOf(needle) + skip });
        const toKernel = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: at(launch, 'act[', 1) });
        const kernelLoc = (Array.isArray(toKernel) ? toKernel[0] : toKernel) as Location;
        assert.strictEqual(kernelLoc.uri, uri);
        assert.deepStrictEqual(kernelLoc.range, { start: at(def, 'act('), end: at(def, 'act(', 3) });
        const toParam = await s.conn.sendRequest(DefinitionRequest.type, { textDocument: { uri }, position: at(launch, 'BLOCK=128') });
        const paramLoc = (Array.isArray(toParam) ? toParam[0] : toParam) as Location;
        assert.deepStrictEqual(paramLoc.range.start, at(def, 'BLOCK:'));
        const refs = await s.conn.sendRequest(ReferencesRequest.type, {
            textDocument: { uri },
            position: at(launch, 'BLOCK=128'),
            context: { includeDeclaration: true },
        });
        // the parameter, its two uses in the kernel, the launch keyword
        assert.strictEqual(refs?.length, 4, JSON.stringify(refs));
        const symbols = (await s.conn.sendRequest(DocumentSymbolRequest.type, { textDocument: { uri } })) as DocumentSymbol[];
        assert.deepStrictEqual(symbols.map((x) => x.name), ['act', 'fill', 'ModelNew']);
        assert.deepStrictEqual(symbols[0].children?.map((c) => c.name), ['x_ptr', 'y_ptr', 'n', 'BLOCK']);
        assert.deepStrictEqual(symbols[2].children?.map((c) => c.name), ['forward']);
        assert.strictEqual(await s.shutdown(), 0);
    });

    it('push diagnostics: waits for publishDiagnostics with KL005 and KL004, and a new version without KL005', async () => {
        const caps = vscodeClientCapabilities();
        delete caps.textDocument!.diagnostic; // a client without pull diagnostics
        const { s } = await open(caps);
        const first = await s.until('diagnostics of version 1', () =>
            s.published.find((p) => p.uri === uri && p.diagnostics.length > 0),
        );
        assert.deepStrictEqual(codes(first.diagnostics).sort(), ['KL004', 'KL005']);
        const kl005 = first.diagnostics.find((d) => d.code === 'KL005')!;
        const fix = await quickFix(s, kl005);
        checkTanhFix(fix, kl005);
        await change(s, fix, 2);
        const second = await s.until('diagnostics of version 2', () =>
            s.published.find((p) => p.uri === uri && p.version === 2),
        );
        assert.deepStrictEqual(codes(second.diagnostics), ['KL004']);
        await s.conn.sendNotification(DidCloseTextDocumentNotification.type, { textDocument: { uri } });
        await s.until('diagnostics cleared on close', () =>
            s.published.find((p, i) => i > s.published.indexOf(second) && p.uri === uri && p.diagnostics.length === 0),
        );
        assert.strictEqual(await s.shutdown(), 0);
    });

    it('hover, signature help and completion know Triton (VS Code capabilities): tl.load, the kernel, its launch', async () => {
        const { s, init } = await open(vscodeClientCapabilities());
        assert.deepStrictEqual(init.capabilities.signatureHelpProvider?.triggerCharacters, ['(', ',']);
        const lines = KERNEL.split('\n');
        const at = (needle: string, delta: number) => {
            const line = lines.findIndex((l) => l.includes(needle));
            return { line, character: lines[line].indexOf(needle) + delta };
        };
        const hover = async (needle: string, delta: number) => {
            const h = await s.conn.sendRequest(HoverRequest.type, { textDocument: { uri }, position: at(needle, delta) });
            return (h?.contents as MarkupContent | undefined)?.value ?? '';
        };
        const load = await hover('tl.load', 4);
        assert.match(load, /tl\.load\(pointer, mask=None, other=None/);
        assert.match(load, /Return a tensor of data whose values are loaded/);
        assert.match(load, /triton-lang\.org\/main\/python-api\/generated\/triton\.language\.load\.html/);
        assert.match(load, /Triton 3\./);
        const kernel = await hover('def act', 5);
        assert.match(kernel, /def act\(x_ptr, y_ptr, n, BLOCK: tl\.constexpr\)/);
        assert.match(kernel, /launched at line 19/);
        const launch = await hover('act[(4,)]', 1);
        assert.match(launch, /\*\*Launch\*\* of `act` on grid `\(4,\)`: 4 programs/);

        const help: SignatureHelp | null = await s.conn.sendRequest(SignatureHelpRequest.type, {
            textDocument: { uri },
            position: at('BLOCK=128', 6),
            context: { triggerKind: 1, isRetrigger: false },
        });
        const sig = help?.signatures[0];
        assert.strictEqual(sig?.label, 'act[grid](x_ptr, y_ptr, n, BLOCK: tl.constexpr)');
        const [a, b] = sig.parameters![help!.activeParameter!].label as [number, number];
        assert.strictEqual(sig.label.slice(a, b), 'BLOCK: tl.constexpr');

        const items = (await s.conn.sendRequest(CompletionRequest.type, {
            textDocument: { uri },
            position: at('tl.load', 3),
        })) as CompletionItem[];
        const loadItem = items.find((i) => i.label === 'load');
        assert.ok(loadItem, 'tl.load offered');
        assert.strictEqual(loadItem.insertText, 'load(${1:pointer})$0');
        assert.match((loadItem.documentation as MarkupContent).value, /triton\.language\.load\.html/);
        assert.ok(!items.some((i) => i.label === 'tanh'), 'tl.tanh is not offered');
    });

    it('accepts every setting the extension maps, applies them live, and refuses invalid ones', async () => {
        const all: Record<string, unknown> = {
            select: [],
            ignore: ['KL008'],
            targetGpu: 'a100',
            python: '/usr/bin/python3',
            reference: 'reference.py',
            atol: 0.001,
            rtol: 0.001,
            'bench.warmup': 2,
            'bench.repeats': 5,
            'bench.timeout': 30,
            'bench.correctnessTrials': 1,
            'llm.baseUrl': 'http://127.0.0.1:9/v1',
            'llm.model': 'test-model',
            'llm.apiKeyEnv': 'KERNEL_LSP_TEST_KEY',
            'llm.candidates': 1,
            'llm.repairs': 0,
            'llm.timeout': 10,
            'llm.maxTokens': 1024,
            promptsDir: dir,
        };
        const ctx = { platform: process.platform, home: os.homedir(), workspaceFolder: dir };
        const mapped = toServerSettings((k) => all[k], ctx);
        assert.deepStrictEqual(mapped.problems, []);
        const { s } = await open(vscodeClientCapabilities(), mapped.settings);
        assert.deepStrictEqual(codes(await pull(s)).sort(), ['KL004', 'KL005']);

        // A settings change, sent as the extension sends it.
        const ignoring = toServerSettings((k) => ({ ...all, ignore: ['KL004'] })[k], ctx).settings;
        await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: configurationPayload(ignoring) });
        const deadline = Date.now() + 10000;
        let now = codes(await pull(s));
        while (now.includes('KL004') && Date.now() < deadline) {
            await new Promise((r) => setTimeout(r, 100));
            now = codes(await pull(s));
        }
        assert.deepStrictEqual(now, ['KL005']);

        // A change with no payload makes the server ask for the `kernel-lsp` section.
        s.configuration = toServerSettings((k) => ({ ...all, ignore: ['KL005'] })[k], ctx).settings;
        await s.conn.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
        now = codes(await pull(s));
        while (!now.includes('KL004') && Date.now() < deadline + 10000) {
            await new Promise((r) => setTimeout(r, 100));
            now = codes(await pull(s));
        }
        assert.deepStrictEqual(now, ['KL004']);
        assert.deepStrictEqual(s.messages.filter((m) => m.type === 1), [], 'no error for valid settings');

        // A value the server refuses is reported, not silently dropped.
        await s.conn.sendNotification(DidChangeConfigurationNotification.type, {
            settings: configurationPayload({ 'target-gpu': 'voodoo3' }),
        });
        const refused = await s.until('an error message', () => s.messages.find((m) => m.type === 1));
        assert.match(refused.message, /voodoo3/);
        assert.strictEqual(await s.shutdown(), 0);
    });

    it('commands: code lens on ModelNew, explain, history, and a rewrite answers a result or a clear error', async () => {
        // An LLM endpoint that refuses at once, so that a wired rewrite fails fast.
        const { s } = await open(vscodeClientCapabilities(), { llm: { 'base-url': 'http://127.0.0.1:9/v1', timeout: 5 }, bench: { timeout: 20 } });
        const lenses = (await s.conn.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) ?? [];
        const bench = lenses.find((l) => l.command?.command === 'kernel-lsp.benchmark');
        assert.ok(bench, JSON.stringify(lenses));
        assert.match(bench.command!.title, /Benchmark vs reference/);
        assert.deepStrictEqual(bench.command!.arguments, [uri]);
        assert.strictEqual(measurementFromLensTitle(bench.command!.title), undefined, 'no result yet');

        const doc: unknown = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'kernel-lsp.explain', arguments: ['KL005'] });
        assert.strictEqual(typeof doc, 'string');
        assert.match(doc as string, /sigmoid/);

        const history: unknown = await s.conn.sendRequest(ExecuteCommandRequest.type, { command: 'kernel-lsp.history', arguments: [uri] });
        assert.strictEqual(typeof history, 'string');

        // The LLM pipeline may not be wired (then: a clear error), or it may
        // fail here for want of an LLM endpoint: either way an answer, not a hang.
        const rewrite = await s.conn
            .sendRequest(ExecuteCommandRequest.type, { command: 'kernel-lsp.rewrite', arguments: [uri, 'persistent'] })
            .then(
                (r: unknown) => ({ ok: true as const, r }),
                (e: unknown) => ({ ok: false as const, e }),
            );
        if (!rewrite.ok) {
            assert.ok(rewrite.e instanceof ResponseError, String(rewrite.e));
            assert.ok(rewrite.e.message.length > 10, `a clear message: ${rewrite.e.message}`);
        }
        assert.strictEqual(await s.shutdown(), 0);
    }).timeout(120_000);

    it("a benchmark under the extension's own progress token: a cancellable begin on that token, and window/workDoneProgress/cancel stops the run", async function () {
        const python = testPython();
        if (!python) {
            this.skip(); // no interpreter with torch + triton: scripts/test.sh always has .venv
        }
        const benchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kernel-lsp-vscode-bench-'));
        try {
            for (const name of ['reference.py', 'candidate_fixed.py']) {
                fs.copyFileSync(path.join(REPO, 'examples', 'tanh_activation', name), path.join(benchDir, name));
            }
            const candidate = pathToFileURL(path.join(benchDir, 'candidate_fixed.py')).toString();
            const s = new Session(bin);
            session = s;
            await s.initialize(vscodeClientCapabilities(), benchDir, { python });
            await s.conn.sendNotification(InitializedNotification.type, {});
            await s.conn.sendNotification(DidOpenTextDocumentNotification.type, {
                textDocument: { uri: candidate, languageId: 'python', version: 1, text: fs.readFileSync(path.join(benchDir, 'candidate_fixed.py'), 'utf8') },
            });

            // What the extension does: its own token, as the request's workDoneToken.
            const token = newToken('benchmark');
            const values: (WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd)[] = [];
            s.conn.onProgress(WorkDoneProgress.type, token, (v) => {
                values.push(v);
                s.wake();
            });
            const answer = s.conn
                .sendRequest(ExecuteCommandRequest.type, { command: 'kernel-lsp.benchmark', arguments: [candidate], workDoneToken: token })
                .then(
                    (r: unknown) => ({ ok: true as const, r }),
                    (e: unknown) => ({ ok: false as const, e }),
                );
            const begin = await s.until('the progress begin on our token', () => values.find((v): v is WorkDoneProgressBegin => v.kind === 'begin'), 30000);
            assert.strictEqual(begin.cancellable, true, `a Cancel button is offered: ${JSON.stringify(begin)}`);
            assert.match(begin.title, /Benchmark/);
            assert.deepStrictEqual(s.created, [], 'the server reports on our token instead of creating its own');

            await s.conn.sendNotification(WorkDoneProgressCancelNotification.type, { token });
            const settled = await answer;
            assert.ok(!settled.ok, `the run was stopped, not finished: ${JSON.stringify(settled)}`);
            assert.ok(settled.e instanceof ResponseError, String(settled.e));
            assert.strictEqual(settled.e.code, LSPErrorCodes.RequestCancelled, settled.e.message);
            const end = await s.until('the progress end', () => values.find((v): v is WorkDoneProgressEnd => v.kind === 'end'), 30000);
            assert.strictEqual(end.message, 'cancelled');
            assert.strictEqual(await s.shutdown(), 0);
        } finally {
            fs.rmSync(benchDir, { recursive: true, force: true });
        }
    }).timeout(120_000);
    it('a KernelBench-size task on the CPU interpreter: KL914 from shapes alone, with its two benchmark actions', async function () {
        const python = testPython();
        if (!python) {
            this.skip(); // no interpreter with torch + triton: scripts/test.sh always has .venv
        }
        const benchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kernel-lsp-vscode-wide-'));
        try {
            for (const name of ['wide_ref.py', 'wide_new.py']) {
                fs.copyFileSync(path.join(REPO, 'tests', 'fixtures', 'bench', name), path.join(benchDir, name));
            }
            const candidate = pathToFileURL(path.join(benchDir, 'wide_new.py')).toString();
            const caps = vscodeClientCapabilities();
            delete caps.textDocument!.diagnostic; // pushed diagnostics, to wait on
            const s = new Session(bin);
            session = s;
            await s.initialize(caps, benchDir, { python });
            await s.conn.sendNotification(InitializedNotification.type, {});
            await s.conn.sendNotification(DidOpenTextDocumentNotification.type, {
                textDocument: { uri: candidate, languageId: 'python', version: 1, text: fs.readFileSync(path.join(benchDir, 'wide_new.py'), 'utf8') },
            });
            const started = Date.now();
            const result = (await s.conn.sendRequest(ExecuteCommandRequest.type, {
                command: 'kernel-lsp.benchmark',
                arguments: [candidate, { cpu: true }],
            })) as { error?: { kind?: string; message?: string } };
            assert.strictEqual(result.error?.kind, 'too-large-for-interpreter', JSON.stringify(result));
            assert.ok(Date.now() - started < 60_000, 'refused from shapes, before 6 GiB were allocated');
            const published = await s.until('KL914 published', () =>
                s.published.find((p) => p.uri === candidate && p.diagnostics.some((d) => d.code === 'KL914')),
            );
            const kl914 = published.diagnostics.find((d) => d.code === 'KL914')!;
            assert.match(kl914.message, /--small/);
            const actions = ((await s.conn.sendRequest(CodeActionRequest.type, {
                textDocument: { uri: candidate },
                range: kl914.range,
                context: { diagnostics: [kl914], only: ['quickfix'] },
            })) ?? []) as CodeAction[];
            const commands = actions
                .filter((a) => a.command?.command === 'kernel-lsp.benchmark')
                .map((a): unknown[] => [a.title, a.command?.command, a.command?.arguments?.[1] as unknown]);
            assert.ok(actions.some((a) => a.title === 'Explain KL914'), 'the rule is explained too');
            assert.deepStrictEqual(commands, [
                ['Benchmark at reduced sizes (CPU interpreter)', 'kernel-lsp.benchmark', { reduced: true }],
                ["Benchmark at the task's full size anyway", 'kernel-lsp.benchmark', { cpu: true, full_size: true }],
            ]);
            // The first action, as the extension runs it: correct at reduced sizes, and it says which.
            const reduced = actions.find((a) => a.title.startsWith('Benchmark at reduced'))!.command!;
            const small = (await s.conn.sendRequest(ExecuteCommandRequest.type, {
                command: reduced.command,
                arguments: reduced.arguments,
            })) as { correct?: boolean; reduced_sizes?: Record<string, number[]> };
            assert.strictEqual(small.correct, true, JSON.stringify(small));
            assert.deepStrictEqual(small.reduced_sizes?.batch_size, [4096, 16], JSON.stringify(small));
            assert.strictEqual(await s.shutdown(), 0);
        } finally {
            fs.rmSync(benchDir, { recursive: true, force: true });
        }
    }).timeout(180_000);
});
