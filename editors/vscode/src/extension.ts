/**
 * The VS Code extension: starts `kernel-lsp serve` for Python files that use
 * Triton, maps the `kernelLsp.*` settings to the server's configuration, and
 * turns the server's commands into VS Code commands, a status-bar item and
 * previews.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as vscode from 'vscode';
import {
    ApplyWorkspaceEditParams,
    ApplyWorkspaceEditRequest,
    ApplyWorkspaceEditResult,
    CodeLensRequest,
    DidChangeConfigurationNotification,
    ErrorCodes,
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    LSPErrorCodes,
    ResponseError,
    RevealOutputChannelOn,
    ServerOptions,
    State,
    TransportKind,
    WorkDoneProgress,
    WorkDoneProgressCancelNotification,
} from 'vscode-languageclient/node';

import { discoverServer, settingFromInspect } from './discovery';
import { editOfResult, needsConfirmation, previewTicked, requireConfirmation, REWRITE_TITLES, rewriteLabel } from './edits';
import { newToken, noResultNotice, ProgressValue, Run, runWithProgress } from './progress';
import { configurationPayload, toServerSettings } from './settings';
import { formatStatus, Measurement, measurementFromLensTitle, measurementFromResult, ServerState } from './status';

const SECTION = 'kernelLsp';
/** Settings that decide how the server process is started: a change restarts it. */
const RESTART_SETTINGS = [`${SECTION}.path`, `${SECTION}.python`];
/** How long a burst of settings changes (the Settings UI writes as you type) is let settle. */
const RESTART_DELAY_MS = 300;

let ext: KernelLspExtension | undefined;

export function activate(context: vscode.ExtensionContext): void {
    ext = new KernelLspExtension(context);
    ext.activate();
}

export async function deactivate(): Promise<void> {
    await ext?.stop();
    ext = undefined;
}

/** Whether a document is one the server should start for: Python that mentions Triton. */
function isKernelFile(doc: vscode.TextDocument): boolean {
    return doc.languageId === 'python' && doc.getText().includes('triton');
}

class KernelLspExtension {
    private client: LanguageClient | undefined;
    private starting: Promise<LanguageClient | undefined> | undefined;
    private state: ServerState = 'stopped';
    private readonly output: vscode.OutputChannel;
    private readonly status: vscode.StatusBarItem;
    private readonly measurements = new Map<string, Measurement>();
    private readonly benchmarking = new Set<string>();
    private settingsProblemsShown = '';
    private restartTimer: ReturnType<typeof setTimeout> | undefined;
    private readonly restartKeys = new Set<string>();
    private restarting: Promise<void> = Promise.resolve();

    constructor(private readonly context: vscode.ExtensionContext) {
        this.output = vscode.window.createOutputChannel('kernel-lsp');
        this.status = vscode.window.createStatusBarItem('kernelLsp.status', vscode.StatusBarAlignment.Right, 100);
        this.status.name = 'kernel-lsp';
        this.status.command = { title: 'kernel-lsp commands', command: 'workbench.action.quickOpen', arguments: ['>kernel-lsp: '] };
        context.subscriptions.push(this.output, this.status);
    }

    activate(): void {
        const c = this.context.subscriptions;
        const command = (id: string, fn: (...args: unknown[]) => unknown) =>
            c.push(vscode.commands.registerCommand(id, fn));
        command('kernelLsp.benchmark', (uri) => this.benchmark(asUri(uri)));
        command('kernelLsp.benchmarkReduced', (uri) => this.benchmark(asUri(uri), { reduced: true }));
        command('kernelLsp.makePersistent', (uri) => this.rewrite('persistent', asUri(uri)));
        command('kernelLsp.rewrite', (uri) => this.pickRewrite(asUri(uri)));
        command('kernelLsp.showHistory', (uri) => this.showTable('kernel-lsp.history', asUri(uri)));
        command('kernelLsp.showTimeline', (uri) => this.showTable('kernel-lsp.timeline', asUri(uri)));
        command('kernelLsp.restartServer', () => this.restart());
        command('kernelLsp.showLogs', () => this.output.show(true));

        c.push(
            vscode.workspace.onDidOpenTextDocument((doc) => this.maybeStart(doc)),
            vscode.workspace.onDidChangeTextDocument((e) => {
                if (!this.client && !this.starting && e.contentChanges.some((ch) => ch.text.includes('triton'))) {
                    this.maybeStart(e.document);
                }
            }),
            vscode.window.onDidChangeActiveTextEditor(() => this.render()),
            vscode.workspace.onDidChangeConfiguration((e) => this.configurationChanged(e)),
        );
        for (const doc of vscode.workspace.textDocuments) {
            this.maybeStart(doc);
        }
        this.render();
    }

    private maybeStart(doc: vscode.TextDocument): void {
        if (!this.client && !this.starting && isKernelFile(doc)) {
            void this.start();
        }
    }

    // ---- settings -------------------------------------------------------

    /** The settings the user set explicitly, in the server's shape. */
    private serverSettings(): Record<string, unknown> {
        const config = vscode.workspace.getConfiguration(SECTION);
        const { settings, problems } = toServerSettings(
            (key) => {
                const i = config.inspect(key);
                return i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
            },
            { platform: process.platform, home: os.homedir(), workspaceFolder: firstFolder() },
        );
        const shown = problems.join('\n');
        if (problems.length > 0 && shown !== this.settingsProblemsShown) {
            this.log(`settings not sent to the server:\n${shown}`);
            void vscode.window.showWarningMessage(`kernel-lsp: ignoring invalid settings: ${problems.join('; ')}`);
        }
        this.settingsProblemsShown = shown;
        return settings;
    }

    private configurationChanged(e: vscode.ConfigurationChangeEvent): void {
        if (!e.affectsConfiguration(SECTION)) {
            return;
        }
        const changed = RESTART_SETTINGS.filter((key) => e.affectsConfiguration(key));
        if (changed.length > 0) {
            this.scheduleRestart(changed);
            return;
        }
        if (e.affectsConfiguration(`${SECTION}.trace`)) {
            return; // vscode-languageclient follows kernelLsp.trace.server itself.
        }
        const client = this.client;
        if (client?.isRunning()) {
            void client
                .sendNotification(DidChangeConfigurationNotification.type, {
                    settings: configurationPayload(this.serverSettings()),
                })
                .catch((err) => this.log(`could not send the settings: ${String(err)}`));
        }
    }

    // ---- lifecycle ------------------------------------------------------

    private start(): Promise<LanguageClient | undefined> {
        if (this.client) {
            return Promise.resolve(this.client);
        }
        this.starting ??= this.doStart().finally(() => {
            this.starting = undefined;
        });
        return this.starting;
    }

    /**
     * `kernelLsp.path` from whichever scope sets it (Workspace Folder, then
     * Workspace, then User settings), read with `inspect()` so that messages
     * can name the scope. The setting has `resource` scope: VS Code applies
     * it from every one of those files, in a remote window too (code-server),
     * where User settings of `machine`/`machine-overridable` scope are dropped.
     */
    private pathSetting() {
        const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri;
        return settingFromInspect(vscode.workspace.getConfiguration(SECTION, folder).inspect<string | null>('path'));
    }

    private async doStart(): Promise<LanguageClient | undefined> {
        const setting = this.pathSetting();
        const found = discoverServer({
            setting,
            extensionPath: this.context.extensionPath,
            env: process.env,
            platform: process.platform,
            home: os.homedir(),
            workspaceFolder: firstFolder(),
            isExecutable,
        });
        if (!found.found) {
            this.setState('not-found');
            this.log(`the server binary was not found. Looked at, in order:\n  ${found.places.join('\n  ')}`);
            void this.notFound(found.message);
            return undefined;
        }
        this.log(
            `using ${found.path} (from ${found.setting ? `kernelLsp.path in ${found.setting.scope}` : found.source === 'bundled' ? 'the bundled binary' : 'PATH'})`,
        );

        const run = { command: found.path, args: ['serve'], transport: TransportKind.stdio };
        const serverOptions: ServerOptions = { run, debug: run };
        const clientOptions: LanguageClientOptions = {
            documentSelector: [
                { language: 'python', scheme: 'file' },
                { language: 'python', scheme: 'untitled' },
            ],
            outputChannel: this.output,
            traceOutputChannel: this.output,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: () => this.serverSettings(),
            middleware: {
                executeCommand: (command, args, next) => this.executeServerCommand(command, args, next),
                provideCodeLenses: async (document, token, next) => {
                    const lenses = await next(document, token);
                    this.noteLenses(document.uri, lenses ?? []);
                    return lenses;
                },
                workspace: {
                    // The server asks for the `kernel-lsp` section; VS Code's is `kernelLsp`.
                    configuration: (params, token, next) => {
                        if (params.items.every((i) => i.section === 'kernel-lsp')) {
                            return params.items.map(() => this.serverSettings());
                        }
                        return next(params, token);
                    },
                },
            },
        };
        const client = new LanguageClient(SECTION, 'kernel-lsp', serverOptions, clientOptions);
        // Registered before start(), so it replaces vscode-languageclient's own handler.
        client.onRequest(ApplyWorkspaceEditRequest.type, (params) => this.applyServerEdit(client, params));
        client.onDidChangeState((e) => {
            if (e.newState === State.Running) {
                this.setState('running');
            } else if (e.newState === State.Starting) {
                this.setState('starting');
            } else if (this.state !== 'error') {
                this.setState('stopped');
            }
        });
        this.client = client;
        this.setState('starting');
        try {
            await client.start();
            const caps = client.initializeResult?.capabilities;
            this.log(`server started: ${client.initializeResult?.serverInfo?.name ?? 'kernel-lsp'} ${client.initializeResult?.serverInfo?.version ?? ''} (encoding ${caps?.positionEncoding ?? 'utf-16'})`);
            return client;
        } catch (err) {
            this.client = undefined;
            this.setState('error');
            this.log(`could not start ${found.path}: ${errorMessage(err)}`);
            void vscode.window
                .showErrorMessage(`kernel-lsp could not start: ${errorMessage(err)}`, 'Show Logs')
                .then((pick) => pick && this.output.show(true));
            return undefined;
        }
    }

    /**
     * `workspace/applyEdit` from the server. An edit that needs confirmation
     * (an LLM rewrite) opens the refactor preview with its entries ticked
     * (see previewTicked); any other edit is applied as vscode-languageclient
     * would. An edit made for an older version of an open document is refused.
     */
    private async applyServerEdit(client: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
        const edit = params.edit;
        for (const change of edit.documentChanges ?? []) {
            if ('textDocument' in change && typeof change.textDocument.version === 'number' && change.textDocument.version >= 0) {
                const uri = client.protocol2CodeConverter.asUri(change.textDocument.uri).toString();
                const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
                if (doc && doc.version !== change.textDocument.version) {
                    return { applied: false, failureReason: `${fileName(uri)} changed since the server made the edit` };
                }
            }
        }
        const converted = await client.protocol2CodeConverter.asWorkspaceEdit(needsConfirmation(edit) ? previewTicked(edit) : edit);
        const applied = await vscode.workspace.applyEdit(converted);
        return applied ? { applied } : { applied, failureReason: 'not applied (discarded in the preview?)' };
    }

    private async notFound(message: string): Promise<void> {
        const pick = await vscode.window.showErrorMessage(message, 'Open Settings', 'Open README');
        if (pick === 'Open Settings') {
            await vscode.commands.executeCommand('workbench.action.openSettings', 'kernelLsp.path');
        } else if (pick === 'Open README') {
            const readme = vscode.Uri.joinPath(this.context.extensionUri, 'README.md');
            await vscode.commands.executeCommand('markdown.showPreview', readme);
        }
    }

    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (client) {
            await client.stop().catch((err) => this.log(`stopping the server: ${errorMessage(err)}`));
        }
    }

    private async restart(): Promise<void> {
        this.log('restarting the server');
        await this.starting;
        await this.stop();
        this.measurements.clear();
        this.benchmarking.clear();
        this.setState('stopped');
        await this.start();
    }

    /**
     * `kernelLsp.path` or `kernelLsp.python` changed: start the server again
     * with the new value, whether it was running, starting, or had not been
     * found (a corrected path is picked up without "Restart Server"). Nothing
     * starts while no kernel file is open. Changes in a burst restart once,
     * and restarts never overlap.
     */
    private scheduleRestart(changed: string[]): void {
        changed.forEach((k) => this.restartKeys.add(k));
        if (this.restartTimer) {
            clearTimeout(this.restartTimer);
        }
        this.restartTimer = setTimeout(() => {
            this.restartTimer = undefined;
            const keys = [...this.restartKeys];
            this.restartKeys.clear();
            this.restarting = this.restarting.then(async () => {
                const wanted =
                    this.client !== undefined ||
                    this.starting !== undefined ||
                    this.state !== 'stopped' ||
                    vscode.workspace.textDocuments.some(isKernelFile);
                if (!wanted) {
                    return;
                }
                this.log(`${keys.join(', ')} changed: restarting the server`);
                await this.restart();
            }).catch((err) => this.log(`restart after a settings change: ${errorMessage(err)}`));
        }, RESTART_DELAY_MS);
    }

    // ---- commands -------------------------------------------------------

    /** The Python document a command applies to: its argument, or the active editor's. */
    private async target(uri: vscode.Uri | undefined, save: boolean): Promise<vscode.TextDocument | undefined> {
        const doc = uri
            ? await vscode.workspace.openTextDocument(uri)
            : vscode.window.activeTextEditor?.document;
        if (!doc || doc.languageId !== 'python') {
            void vscode.window.showWarningMessage('kernel-lsp: open a Python file with a Triton kernel first.');
            return undefined;
        }
        if (save && doc.isDirty && !(await doc.save())) {
            void vscode.window.showWarningMessage('kernel-lsp: save the file first: the benchmark runs what is on disk.');
            return undefined;
        }
        return doc;
    }

    private async readyClient(): Promise<LanguageClient | undefined> {
        const client = this.client ?? (await this.start());
        if (client && !client.isRunning()) {
            await client.start().catch(() => undefined);
        }
        return client?.isRunning() ? client : undefined;
    }

    /** `options`: `{ reduced: true }` checks correctness on the CPU interpreter at reduced sizes. */
    private async benchmark(uri?: vscode.Uri, options?: { reduced: boolean }): Promise<unknown> {
        const doc = await this.target(uri, true);
        if (doc && (await this.readyClient())) {
            // Through the command vscode-languageclient registered, so the
            // middleware below handles it like a click on the code lens.
            const args: unknown[] = options ? [doc.uri.toString(), options] : [doc.uri.toString()];
            return vscode.commands.executeCommand('kernel-lsp.benchmark', ...args);
        }
        return undefined;
    }

    private async pickRewrite(uri?: vscode.Uri): Promise<unknown> {
        const items = Object.entries(REWRITE_TITLES).map(([action, title]) => ({ label: title, action }));
        const pick = await vscode.window.showQuickPick(items, { placeHolder: 'Rewrite the kernel (LLM, checked on the GPU before it is offered)' });
        return pick ? this.rewrite(pick.action, uri) : undefined;
    }

    private async rewrite(action: string, uri?: vscode.Uri): Promise<unknown> {
        const doc = await this.target(uri, true);
        if (!doc || !(await this.readyClient())) {
            return undefined;
        }
        const args: unknown[] = [doc.uri.toString(), action];
        const editor = vscode.window.activeTextEditor;
        if (editor && editor.document === doc && !editor.selection.isEmpty) {
            args.push(this.client!.code2ProtocolConverter.asRange(editor.selection));
        }
        return vscode.commands.executeCommand('kernel-lsp.rewrite', ...args);
    }

    private async showTable(command: string, uri?: vscode.Uri): Promise<void> {
        const doc = await this.target(uri, false);
        if (doc && (await this.readyClient())) {
            await vscode.commands.executeCommand(command, doc.uri.toString());
        }
    }

    /**
     * Every server command goes through here, whether it came from our
     * commands, a code lens or a code action. Requests are sent directly, not
     * through `next`, so that a failure is reported once, in our words.
     */
    private async executeServerCommand(
        command: string,
        args: unknown[],
        next: (command: string, args: unknown[]) => vscode.ProviderResult<unknown>,
    ): Promise<unknown> {
        const client = this.client;
        if (!client) {
            return next(command, args);
        }
        const send = (): Promise<unknown> => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
        const uri = typeof args[0] === 'string' ? args[0] : undefined;
        switch (command) {
            case 'kernel-lsp.benchmark': {
                // The harness runs what is on disk: save first, also when the code lens was clicked.
                const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
                if (open?.isDirty && !(await open.save())) {
                    void vscode.window.showWarningMessage('kernel-lsp: save the file first: the benchmark runs what is on disk.');
                    return undefined;
                }
                if (uri) {
                    this.benchmarking.add(uri);
                }
                this.render();
                try {
                    const run = await this.runWithProgress(client, command, args, `kernel-lsp: Benchmark ${fileName(uri)}`);
                    this.logRun('benchmark', uri, run);
                    if (run.outcome.kind === 'result') {
                        const m = measurementFromResult(run.outcome.value);
                        if (uri && m) {
                            this.measurements.set(uri, m);
                        }
                    }
                    // A failed run's error the server showed itself (data.shown) is not shown twice.
                    this.showNoResult('benchmark', run, serverShowed);
                    if (run.outcome.kind === 'error') {
                        // After a cancelled run the server asks for no refresh: the
                        // lens would say "Benchmarking…" until the next edit.
                        this.refreshLenses(client, open);
                    }
                    return run.outcome.kind === 'result' ? run.outcome.value : undefined;
                } finally {
                    if (uri) {
                        this.benchmarking.delete(uri);
                    }
                    this.render();
                }
            }
            case 'kernel-lsp.rewrite': {
                const action = typeof args[1] === 'string' ? args[1] : 'rewrite';
                const what = REWRITE_TITLES[action] ?? action;
                const run = await this.runWithProgress(client, command, args, `kernel-lsp: ${what} ${fileName(uri)}`);
                this.logRun(`rewrite ${action}`, uri, run);
                if (run.outcome.kind === 'error' || run.outcome.value === null || run.outcome.value === undefined) {
                    this.showNoResult(what, run, serverShowed);
                    return undefined;
                }
                const result = run.outcome.value;
                try {
                    const edit = editOfResult(result);
                    if (edit) {
                        // The server returned the edit instead of sending workspace/applyEdit:
                        // apply it through the refactor preview all the same.
                        const { label, description } = rewriteLabel(action, result);
                        const confirmed = previewTicked(requireConfirmation(edit, label, description));
                        const converted = await client.protocol2CodeConverter.asWorkspaceEdit(confirmed);
                        await vscode.workspace.applyEdit(converted);
                    }
                    return result;
                } catch (err) {
                    this.reportFailure(REWRITE_TITLES[action] ?? action, err);
                    return undefined;
                }
            }
            case 'kernel-lsp.history':
            case 'kernel-lsp.timeline':
            case 'kernel-lsp.explain': {
                try {
                    const result = await send();
                    if (typeof result === 'string') {
                        await showMarkdown(result);
                    }
                    return result;
                } catch (err) {
                    this.reportFailure(command.replace('kernel-lsp.', ''), err);
                    return undefined;
                }
            }
            default:
                return next(command, args);
        }
    }

    /**
     * Sends a long-running server command (benchmark, rewrite) with a progress
     * token of our own, under a progress notification with a Cancel button
     * (see progress.ts for why not vscode-languageclient's own progress).
     */
    private runWithProgress(client: LanguageClient, command: string, args: unknown[], title: string): Promise<Run> {
        const token = newToken(command.replace('kernel-lsp.', ''));
        return runWithProgress(
            {
                withProgress: (t, task) =>
                    Promise.resolve(
                        vscode.window.withProgress(
                            { location: vscode.ProgressLocation.Notification, title: t, cancellable: true },
                            (progress, cancel) =>
                                task(
                                    (message) => progress.report({ message }),
                                    (listener) => {
                                        cancel.onCancellationRequested(listener);
                                    },
                                ),
                        ),
                    ),
                onProgress: (t, listener) =>
                    client.onProgress(WorkDoneProgress.type, t, (value) => listener(value as ProgressValue)),
                cancel: (t) => {
                    this.log(`cancelling ${command} (window/workDoneProgress/cancel ${t})`);
                    client
                        .sendNotification(WorkDoneProgressCancelNotification.type, { token: t })
                        .catch((err) => this.log(`could not send the cancel: ${errorMessage(err)}`));
                },
            },
            title,
            token,
            (t) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken: t }),
        );
    }

    /** Asks VS Code for the document's code lenses again (what `workspace/codeLens/refresh` does). */
    private refreshLenses(client: LanguageClient, doc: vscode.TextDocument | undefined): void {
        if (!doc) {
            return;
        }
        try {
            client.getFeature(CodeLensRequest.method).getProvider(doc)?.onDidChangeCodeLensEmitter.fire();
        } catch (err) {
            this.log(`could not refresh the code lenses: ${errorMessage(err)}`);
        }
    }

    private logRun(what: string, uri: string | undefined, run: Run): void {
        const o = run.outcome;
        const end = run.progress.find((p) => p.kind === 'end')?.message;
        const outcome = o.kind === 'result' ? JSON.stringify(o.value) : `no result: ${errorMessage(o.error)}`;
        this.log(`${what} ${uri ?? ''}${run.cancelled ? ' (cancelled by the user)' : ''}${end ? ` [${end}]` : ''}: ${outcome}`);
    }

    /** A run that ended without a result says so in a notification. */
    private showNoResult(what: string, run: Run, reported: (error: unknown) => boolean): void {
        const notice = noResultNotice(what, run, reported);
        if (notice === undefined) {
            return;
        }
        if (run.outcome.kind === 'error' && !run.cancelled && !isCancelled(run.outcome.error)) {
            void vscode.window.showErrorMessage(notice, 'Show Logs').then((pick) => pick && this.output.show(true));
        } else {
            void vscode.window.showWarningMessage(notice);
        }
    }

    private reportFailure(what: string, err: unknown, show: (e: ResponseError<unknown>) => boolean = () => true): void {
        if (err instanceof ResponseError) {
            if (err.code === LSPErrorCodes.RequestCancelled || err.code === ErrorCodes.PendingResponseRejected || err.code === ErrorCodes.ConnectionInactive) {
                this.log(`${what}: ${err.message}`);
                return;
            }
            this.log(`${what} failed: ${err.message} (${err.code})`);
            if (show(err)) {
                void vscode.window.showErrorMessage(`kernel-lsp ${what}: ${err.message}`);
            }
            return;
        }
        this.log(`${what} failed: ${errorMessage(err)}`);
        void vscode.window.showErrorMessage(`kernel-lsp ${what}: ${errorMessage(err)}`);
    }

    private noteLenses(uri: vscode.Uri, lenses: vscode.CodeLens[]): void {
        for (const lens of lenses) {
            if (lens.command?.command !== 'kernel-lsp.benchmark') {
                continue;
            }
            const m = measurementFromLensTitle(lens.command.title);
            const key = uri.toString();
            if (m) {
                this.measurements.set(key, m);
            } else if (!this.benchmarking.has(key)) {
                this.measurements.delete(key);
            }
            this.render();
        }
    }

    // ---- status ---------------------------------------------------------

    private setState(state: ServerState): void {
        this.state = state;
        void vscode.commands.executeCommand('setContext', 'kernelLsp.active', state === 'running');
        this.render();
    }

    private render(): void {
        const editor = vscode.window.activeTextEditor;
        const uri = editor?.document.uri.toString();
        const view = formatStatus({
            state: this.state,
            benchmarking: uri !== undefined && this.benchmarking.has(uri),
            measurement: uri !== undefined ? this.measurements.get(uri) : undefined,
        });
        this.status.text = view.text;
        this.status.tooltip = view.tooltip;
        this.status.backgroundColor = view.background
            ? new vscode.ThemeColor(`statusBarItem.${view.background}Background`)
            : undefined;
        const relevant = editor?.document.languageId === 'python' && (this.client !== undefined || this.state !== 'stopped');
        if (relevant) {
            this.status.show();
        } else {
            this.status.hide();
        }
    }

    private log(message: string): void {
        this.output.appendLine(`[${new Date().toLocaleTimeString()}] ${message}`);
    }
}

function asUri(arg: unknown): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri) {
        return arg;
    }
    if (typeof arg === 'string' && arg.length > 0) {
        return vscode.Uri.parse(arg);
    }
    return undefined;
}

function firstFolder(): string | undefined {
    return vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file')?.uri.fsPath;
}

function isExecutable(p: string): boolean {
    try {
        if (!fs.statSync(p).isFile()) {
            return false;
        }
        if (process.platform !== 'win32') {
            fs.accessSync(p, fs.constants.X_OK);
        }
        return true;
    } catch {
        return false;
    }
}

async function showMarkdown(content: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content });
    await vscode.commands.executeCommand('markdown.showPreviewToSide', doc.uri);
}

function errorMessage(err: unknown): string {
    return err instanceof Error ? err.message : String(err);
}

/** Whether the server answered "cancelled". */
function isCancelled(err: unknown): boolean {
    return err instanceof ResponseError && err.code === LSPErrorCodes.RequestCancelled;
}

/** Whether the server showed this error itself (window/showMessage) and says so (`data.shown`). */
function serverShowed(err: unknown): boolean {
    return err instanceof ResponseError && (err.data as { shown?: unknown } | undefined)?.shown === true;
}

/** The file name of a `file:` URI, for titles. */
function fileName(uri: string | undefined): string {
    if (!uri) {
        return '';
    }
    try {
        return vscode.Uri.parse(uri).path.split('/').pop() ?? '';
    } catch {
        return '';
    }
}
