/**
 * LLM rewrites are never applied unseen: their WorkspaceEdit is rewritten so
 * that every text edit carries a change annotation with
 * `needsConfirmation: true`, which makes VS Code open its refactor preview.
 * Pure (protocol types only) and unit-tested.
 */
import type {
    AnnotatedTextEdit,
    ChangeAnnotation,
    CreateFile,
    TextDocumentEdit,
    TextEdit,
    WorkspaceEdit,
} from 'vscode-languageserver-protocol';

export const REWRITE_ANNOTATION = 'kernel-lsp.rewrite';

export function isWorkspaceEdit(value: unknown): value is WorkspaceEdit {
    if (typeof value !== 'object' || value === null) {
        return false;
    }
    const v = value as Record<string, unknown>;
    return (
        (typeof v.changes === 'object' && v.changes !== null) ||
        Array.isArray(v.documentChanges)
    );
}

/**
 * Finds the edit in a rewrite command's result: the result itself, or its
 * `edit` / `workspaceEdit` field.
 */
export function editOfResult(result: unknown): WorkspaceEdit | undefined {
    if (isWorkspaceEdit(result)) {
        return result;
    }
    if (typeof result === 'object' && result !== null) {
        const r = result as Record<string, unknown>;
        for (const k of ['edit', 'workspaceEdit']) {
            if (isWorkspaceEdit(r[k])) {
                return r[k];
            }
        }
    }
    return undefined;
}

/** The same edit with every text edit annotated as needing confirmation. */
export function requireConfirmation(edit: WorkspaceEdit, label: string, description?: string): WorkspaceEdit {
    const annotation: ChangeAnnotation = { label, needsConfirmation: true };
    if (description) {
        annotation.description = description;
    }
    const annotate = (e: TextEdit | AnnotatedTextEdit): AnnotatedTextEdit => ({
        range: e.range,
        newText: e.newText,
        annotationId: REWRITE_ANNOTATION,
    });
    const documentChanges: WorkspaceEdit['documentChanges'] = [];
    if (edit.documentChanges) {
        for (const change of edit.documentChanges) {
            if ('textDocument' in change && 'edits' in change) {
                const tde: TextDocumentEdit = {
                    textDocument: change.textDocument,
                    edits: change.edits.map(annotate),
                };
                documentChanges.push(tde);
            } else {
                // create / rename / delete: annotate the operation itself.
                documentChanges.push({ ...change, annotationId: REWRITE_ANNOTATION });
            }
        }
    } else if (edit.changes) {
        for (const [uri, edits] of Object.entries(edit.changes)) {
            documentChanges.push({
                textDocument: { uri, version: null },
                edits: edits.map(annotate),
            });
        }
    }
    return {
        documentChanges,
        changeAnnotations: { ...(edit.changeAnnotations ?? {}), [REWRITE_ANNOTATION]: annotation },
    };
}

export const REVIEW_ANNOTATION = 'kernel-lsp.review';

/** Whether any change annotation of the edit asks for confirmation. */
export function needsConfirmation(edit: WorkspaceEdit): boolean {
    return Object.values(edit.changeAnnotations ?? {}).some((a) => a.needsConfirmation === true);
}

/**
 * The edit as VS Code's refactor preview should get it: opened, with the
 * change the user asked for already ticked.
 *
 * VS Code opens the preview when any edit's annotation needs confirmation,
 * and lists exactly those edits unticked; an unticked text edit is left out
 * of the preview's diff, so both sides look the same until the user ticks it,
 * and Apply alone changes nothing. So the rewrite's own annotations (label and
 * description kept) stop asking for confirmation, and one no-op operation
 * asks instead: creating each edited file with `ignoreIfExists`, which the
 * preview does not list (the file exists) and which does nothing if applied.
 * The preview still opens and nothing changes before Apply; its entries start
 * ticked and its diff shows the old text against the new.
 */
export function previewTicked(edit: WorkspaceEdit): WorkspaceEdit {
    const annotations: Record<string, ChangeAnnotation> = {};
    for (const [id, a] of Object.entries(edit.changeAnnotations ?? {})) {
        annotations[id] = { ...a, needsConfirmation: false };
    }
    const uris: string[] = [];
    const changes: NonNullable<WorkspaceEdit['documentChanges']> = [];
    if (edit.documentChanges) {
        for (const change of edit.documentChanges) {
            if ('textDocument' in change && !uris.includes(change.textDocument.uri)) {
                uris.push(change.textDocument.uri);
            }
            changes.push(change);
        }
    } else if (edit.changes) {
        for (const [uri, edits] of Object.entries(edit.changes)) {
            uris.push(uri);
            changes.push({ textDocument: { uri, version: null }, edits });
        }
    }
    const label = Object.values(annotations)[0]?.label ?? 'kernel-lsp rewrite';
    annotations[REVIEW_ANNOTATION] = { label, description: 'review before applying', needsConfirmation: true };
    const review: CreateFile[] = uris.map((uri) => ({
        kind: 'create',
        uri,
        options: { ignoreIfExists: true },
        annotationId: REVIEW_ANNOTATION,
    }));
    return { documentChanges: [...review, ...changes], changeAnnotations: annotations };
}

/** What the rewrite result says about the candidate it offers (its speedup), for the preview's label. */
export function rewriteLabel(action: string, result: unknown): { label: string; description?: string } {
    const label = `kernel-lsp: ${REWRITE_TITLES[action] ?? action}`;
    if (typeof result !== 'object' || result === null) {
        return { label };
    }
    const r = result as Record<string, unknown>;
    const speedup = typeof r.speedup === 'number' ? `${r.speedup.toFixed(2)}× vs PyTorch` : undefined;
    const title = typeof r.title === 'string' ? r.title : undefined;
    const description = [title, speedup].filter((x) => x !== undefined).join(' · ');
    return description ? { label, description } : { label };
}

export const REWRITE_TITLES: Record<string, string> = {
    persistent: 'make the kernel persistent',
    'grid-2d': 'turn the tile loop into a 2-D grid',
    'block-size': 'reduce block sizes to fit shared memory',
    repair: 'repair the compile or accuracy error',
};
