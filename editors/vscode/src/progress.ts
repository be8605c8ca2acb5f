/**
 * Benchmarks and rewrites run under a progress notification with a Cancel
 * button, and a run that ends without a result says so. Pure: VS Code's
 * progress UI and the language client are passed in, so it is unit-tested
 * without VS Code.
 *
 * Why the extension makes the progress itself: when the server creates the
 * token (`window/workDoneProgress/create`), vscode-languageclient shows it in
 * the status bar (`ProgressLocation.Window`), where VS Code draws no Cancel
 * button even for a `cancellable` begin. So the extension picks the token,
 * sends it as the request's `workDoneToken` (the server then reports on it
 * and cancels the run it belongs to), shows the progress as a notification,
 * and on Cancel sends `window/workDoneProgress/cancel` for that token.
 */

/** A `$/progress` value (WorkDoneProgressBegin, Report or End). */
export interface ProgressValue {
    kind: 'begin' | 'report' | 'end';
    title?: string;
    message?: string;
    percentage?: number;
    cancellable?: boolean;
}

export interface ProgressDeps {
    /**
     * Shows a cancellable progress notification while `task` runs. `report`
     * sets its message; `onCancel` registers what Cancel does.
     */
    withProgress<T>(
        title: string,
        task: (report: (message: string) => void, onCancel: (listener: () => void) => void) => Promise<T>,
    ): Promise<T>;
    /** Subscribes to the server's `$/progress` for `token`. */
    onProgress(token: string, listener: (value: ProgressValue) => void): { dispose(): void };
    /** Sends `window/workDoneProgress/cancel` for `token`. */
    cancel(token: string): void;
}

export type RunOutcome =
    | { kind: 'result'; value: unknown }
    | { kind: 'error'; error: unknown };

export interface Run {
    outcome: RunOutcome;
    /** Whether the user pressed Cancel. */
    cancelled: boolean;
    /** The server's progress, in order, for the log. */
    progress: ProgressValue[];
}

let counter = 0;

/** A fresh progress token, unique within this extension host. */
export function newToken(what: string): string {
    counter += 1;
    return `kernel-lsp.vscode/${what}/${Date.now().toString(36)}-${counter}`;
}

/**
 * Runs `send(token)` (the request, with `token` as its workDoneToken) under a
 * cancellable progress notification that shows the server's progress
 * messages. The notification closes when the server ends the progress or the
 * request settles, whichever comes first (a rewrite's request stays open
 * while its Refactor Preview waits for the user). Never rejects: the
 * request's error is in the outcome.
 */
export async function runWithProgress(
    deps: ProgressDeps,
    title: string,
    token: string,
    send: (token: string) => Promise<unknown>,
): Promise<Run> {
    const progress: ProgressValue[] = [];
    let cancelled = false;
    let report: ((message: string) => void) | undefined;
    let pending: string | undefined;
    let ended: () => void = () => undefined;
    const endSeen = new Promise<void>((resolve) => (ended = resolve));
    // Subscribed before the request goes out, so that no `begin` is missed.
    const sub = deps.onProgress(token, (value) => {
        progress.push(value);
        if (value.kind === 'end') {
            ended();
            return;
        }
        const text = progressText(value);
        if (text !== undefined) {
            if (report) {
                report(text);
            } else {
                pending = text;
            }
        }
    });
    const request: Promise<RunOutcome> = send(token).then(
        (value) => ({ kind: 'result', value }),
        (error: unknown) => ({ kind: 'error', error }),
    );
    try {
        await deps.withProgress(title, async (r, onCancel) => {
            report = r;
            if (pending !== undefined) {
                r(pending);
            }
            onCancel(() => {
                if (!cancelled) {
                    cancelled = true;
                    r('cancelling…');
                    deps.cancel(token);
                }
            });
            await Promise.race([request, endSeen]);
        });
        return { outcome: await request, cancelled, progress };
    } finally {
        sub.dispose();
    }
}

/** The notification's message for one `$/progress` value. */
export function progressText(value: ProgressValue): string | undefined {
    const parts: string[] = [];
    if (typeof value.message === 'string' && value.message.length > 0) {
        parts.push(value.message);
    }
    if (typeof value.percentage === 'number') {
        parts.push(`${Math.round(value.percentage)}%`);
    }
    return parts.length > 0 ? parts.join(' · ') : undefined;
}

/** JSON-RPC error codes that mean "no result" rather than "the run failed". */
const REQUEST_CANCELLED = -32800; // LSPErrorCodes.RequestCancelled
const PENDING_RESPONSE_REJECTED = -32097; // ErrorCodes.PendingResponseRejected (the server exited)
const CONNECTION_INACTIVE = -32096; // ErrorCodes.ConnectionInactive

function errorCode(error: unknown): number | undefined {
    const code = (error as { code?: unknown } | null | undefined)?.code;
    return typeof code === 'number' ? code : undefined;
}

function errorText(error: unknown): string {
    if (error instanceof Error) {
        return error.message;
    }
    const message = (error as { message?: unknown } | null | undefined)?.message;
    return typeof message === 'string' ? message : String(error);
}

/**
 * What to tell the user when a run ended without a result, or undefined when
 * it has one (or failed with an error that is reported elsewhere: `reported`
 * says whether the server already showed that error itself).
 */
export function noResultNotice(what: string, run: Run, reported: (error: unknown) => boolean): string | undefined {
    const o = run.outcome;
    if (o.kind === 'result') {
        return o.value === null || o.value === undefined ? `kernel-lsp: ${what} ended without a result.` : undefined;
    }
    const code = errorCode(o.error);
    if (code === REQUEST_CANCELLED || run.cancelled) {
        return `kernel-lsp: ${what} cancelled; no result.`;
    }
    if (code === PENDING_RESPONSE_REJECTED || code === CONNECTION_INACTIVE) {
        return `kernel-lsp: ${what} ended without a result: the server stopped (${errorText(o.error)}).`;
    }
    return reported(o.error) ? undefined : `kernel-lsp ${what}: ${errorText(o.error)}`;
}
