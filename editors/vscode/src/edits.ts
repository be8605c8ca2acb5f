/**
 * LLM rewrites are never applied unseen: their WorkspaceEdit is rewritten so
 * that every text edit carries a change annotation with
 * `needsConfirmation: true`, which makes VS Code open its refactor preview.
 * Pure (protocol types only) and unit-tested.
 */
import type {
    AnnotatedTextEdit,
    ChangeAnnotation,
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
