/**
 * The client capabilities that vscode-languageclient sends from inside VS
 * Code, computed by the real `LanguageClient` class. No VS Code can run in
 * these tests, so the `vscode` module it imports is replaced by an inert
 * stand-in: computing capabilities only fills in objects and reads
 * `vscode.version`.
 */
import Module from 'module';
import type { ClientCapabilities } from 'vscode-languageserver-protocol';

function inert(name: string): unknown {
    const fn = function () {
        return inert(`${name}()`);
    };
    return new Proxy(fn, {
        get(_t, p) {
            if (p === 'then') {
                return undefined;
            }
            if (p === 'version') {
                return '1.82.0';
            }
            if (p === Symbol.toPrimitive) {
                return () => name;
            }
            return inert(`${name}.${String(p)}`);
        },
        construct: () => inert(`new ${name}`) as object,
        apply: () => inert(`${name}()`),
    });
}

export function vscodeClientCapabilities(): ClientCapabilities {
    type Loader = (request: string, parent: unknown, isMain: boolean) => unknown;
    const mod = Module as unknown as { _load: Loader };
    const original = mod._load;
    mod._load = function (this: unknown, request: string, parent: unknown, isMain: boolean) {
        return request === 'vscode' ? inert('vscode') : original.call(this, request, parent, isMain);
    };
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { LanguageClient } = require('vscode-languageclient/node') as typeof import('vscode-languageclient/node');
        const client = new LanguageClient('kernelLsp', 'kernel-lsp', { command: 'kernel-lsp', args: ['serve'] }, {
            documentSelector: [{ language: 'python', scheme: 'file' }],
        });
        const internal = client as unknown as { computeClientCapabilities(): ClientCapabilities };
        return JSON.parse(JSON.stringify(internal.computeClientCapabilities())) as ClientCapabilities;
    } finally {
        mod._load = original;
    }
}
