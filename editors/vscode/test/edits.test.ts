import * as assert from 'assert';
import type { WorkspaceEdit } from 'vscode-languageserver-protocol';
import { editOfResult, needsConfirmation, previewTicked, REVIEW_ANNOTATION, REWRITE_ANNOTATION, requireConfirmation, rewriteLabel } from '../src/edits';
import { vscodeClientCapabilities } from './vscodeCapabilities';

const range = { start: { line: 1, character: 0 }, end: { line: 2, character: 0 } };

describe('LLM rewrites open the refactor preview', () => {
    it('the client declares change-annotation support, so the server may annotate', () => {
        const caps = vscodeClientCapabilities();
        assert.strictEqual(caps.workspace?.applyEdit, true);
        assert.strictEqual(caps.workspace?.workspaceEdit?.documentChanges, true);
        assert.deepStrictEqual(caps.workspace?.workspaceEdit?.changeAnnotationSupport, { groupsOnLabel: true });
        assert.deepStrictEqual(caps.general?.positionEncodings, ['utf-16']);
        assert.strictEqual(caps.window?.workDoneProgress, true);
    });

    it('annotates every edit of `changes` as needing confirmation', () => {
        const edit: WorkspaceEdit = { changes: { 'file:///k.py': [{ range, newText: 'new\n' }] } };
        const out = requireConfirmation(edit, 'kernel-lsp: make the kernel persistent', '1.62× vs PyTorch');
        assert.deepStrictEqual(out, {
            documentChanges: [
                {
                    textDocument: { uri: 'file:///k.py', version: null },
                    edits: [{ range, newText: 'new\n', annotationId: REWRITE_ANNOTATION }],
                },
            ],
            changeAnnotations: {
                [REWRITE_ANNOTATION]: {
                    label: 'kernel-lsp: make the kernel persistent',
                    description: '1.62× vs PyTorch',
                    needsConfirmation: true,
                },
            },
        });
    });

    it('keeps document versions and file operations of `documentChanges`', () => {
        const edit: WorkspaceEdit = {
            documentChanges: [
                { textDocument: { uri: 'file:///k.py', version: 7 }, edits: [{ range, newText: 'x' }] },
                { kind: 'create', uri: 'file:///k_ref.py' },
            ],
        };
        const out = requireConfirmation(edit, 'l');
        assert.deepStrictEqual(out.documentChanges, [
            { textDocument: { uri: 'file:///k.py', version: 7 }, edits: [{ range, newText: 'x', annotationId: REWRITE_ANNOTATION }] },
            { kind: 'create', uri: 'file:///k_ref.py', annotationId: REWRITE_ANNOTATION },
        ]);
        assert.deepStrictEqual(out.changeAnnotations, { [REWRITE_ANNOTATION]: { label: 'l', needsConfirmation: true } });
    });

    it('opens the preview with the hunks ticked: only a no-op create of the file asks for confirmation', () => {
        const hunk2 = { start: { line: 9, character: 0 }, end: { line: 9, character: 4 } };
        const edit: WorkspaceEdit = {
            documentChanges: [
                {
                    textDocument: { uri: 'file:///k.py', version: 3 },
                    edits: [
                        { range, newText: 'a', annotationId: 'r' },
                        { range: hunk2, newText: 'b', annotationId: 'r' },
                    ],
                },
            ],
            changeAnnotations: { r: { label: 'Make persistent: correct', description: '1 candidate', needsConfirmation: true } },
        };
        assert.strictEqual(needsConfirmation(edit), true);
        const out = previewTicked(edit);
        assert.deepStrictEqual(out.documentChanges, [
            { kind: 'create', uri: 'file:///k.py', options: { ignoreIfExists: true }, annotationId: REVIEW_ANNOTATION },
            edit.documentChanges![0],
        ]);
        assert.deepStrictEqual(out.changeAnnotations, {
            r: { label: 'Make persistent: correct', description: '1 candidate', needsConfirmation: false },
            [REVIEW_ANNOTATION]: { label: 'Make persistent: correct', description: 'review before applying', needsConfirmation: true },
        });
        assert.strictEqual(needsConfirmation(out), true, 'the preview still opens');
        assert.strictEqual(needsConfirmation({ changes: {} }), false);
    });

    it('finds the edit in a rewrite result, and labels it', () => {
        const edit: WorkspaceEdit = { changes: {} };
        assert.strictEqual(editOfResult(edit), edit);
        assert.strictEqual(editOfResult({ edit, speedup: 2 }), edit);
        assert.strictEqual(editOfResult({ speedup: 2 }), undefined);
        assert.strictEqual(editOfResult(null), undefined);
        assert.deepStrictEqual(rewriteLabel('persistent', { speedup: 2.5 }), {
            label: 'kernel-lsp: make the kernel persistent',
            description: '2.50× vs PyTorch',
        });
        assert.deepStrictEqual(rewriteLabel('other', null), { label: 'kernel-lsp: other' });
    });
});
