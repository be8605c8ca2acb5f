import * as assert from 'assert';
import { discoverServer, DiscoveryInput, executableNames, expandPath } from '../src/discovery';

/** A fake file system: the set of executable files. */
function input(files: string[], over: Partial<DiscoveryInput> = {}): DiscoveryInput {
    const set = new Set(files);
    return {
        extensionPath: '/ext',
        env: { PATH: '/usr/local/bin:/usr/bin' },
        platform: 'linux',
        home: '/home/u',
        workspaceFolder: '/work/proj',
        isExecutable: (p) => set.has(p),
        ...over,
    };
}

describe('server discovery', () => {
    it('prefers the kernelLsp.path setting', () => {
        const r = discoverServer(input(['/opt/kl/kernel-lsp', '/ext/bin/kernel-lsp', '/usr/bin/kernel-lsp'], { configured: '/opt/kl/kernel-lsp' }));
        assert.deepStrictEqual(r, { found: true, path: '/opt/kl/kernel-lsp', source: 'setting' });
    });

    it('expands ~ and ${workspaceFolder} in the setting, and takes relative paths from the workspace', () => {
        assert.deepStrictEqual(
            discoverServer(input(['/home/u/.cargo/bin/kernel-lsp'], { configured: '~/.cargo/bin/kernel-lsp' })),
            { found: true, path: '/home/u/.cargo/bin/kernel-lsp', source: 'setting' },
        );
        assert.deepStrictEqual(
            discoverServer(input(['/work/proj/target/debug/kernel-lsp'], { configured: '${workspaceFolder}/target/debug/kernel-lsp' })),
            { found: true, path: '/work/proj/target/debug/kernel-lsp', source: 'setting' },
        );
        assert.deepStrictEqual(
            discoverServer(input(['/work/proj/target/release/kernel-lsp'], { configured: 'target/release/kernel-lsp' })),
            { found: true, path: '/work/proj/target/release/kernel-lsp', source: 'setting' },
        );
    });

    it('looks a bare name in the setting up on PATH', () => {
        const r = discoverServer(input(['/usr/bin/kernel-lsp-nightly'], { configured: 'kernel-lsp-nightly' }));
        assert.deepStrictEqual(r, { found: true, path: '/usr/bin/kernel-lsp-nightly', source: 'setting' });
    });

    it('does not fall back silently when the setting points nowhere', () => {
        const r = discoverServer(input(['/ext/bin/kernel-lsp'], { configured: '/nope/kernel-lsp' }));
        assert.strictEqual(r.found, false);
        if (!r.found) {
            assert.match(r.message, /kernelLsp\.path is set to "\/nope\/kernel-lsp"/);
            assert.deepStrictEqual(r.tried, ['/nope/kernel-lsp']);
        }
    });

    it('uses the bundled binary before PATH, and treats a blank setting as unset', () => {
        const r = discoverServer(input(['/ext/bin/kernel-lsp', '/usr/bin/kernel-lsp'], { configured: '  ' }));
        assert.deepStrictEqual(r, { found: true, path: '/ext/bin/kernel-lsp', source: 'bundled' });
    });

    it('searches PATH in order', () => {
        const r = discoverServer(input(['/usr/bin/kernel-lsp', '/usr/local/bin/kernel-lsp']));
        assert.deepStrictEqual(r, { found: true, path: '/usr/local/bin/kernel-lsp', source: 'PATH' });
    });

    it('says where it looked when nothing is found', () => {
        const r = discoverServer(input([], { env: { PATH: '/a::/b' } }));
        assert.strictEqual(r.found, false);
        if (!r.found) {
            assert.deepStrictEqual(r.tried, ['/ext/bin/kernel-lsp', '/a/kernel-lsp', '/b/kernel-lsp']);
            assert.match(r.message, /set kernelLsp\.path/);
        }
        const noPath = discoverServer(input([], { env: {} }));
        assert.strictEqual(noPath.found, false);
    });

    it('knows Windows: .exe, PATHEXT, `Path`, `;`', () => {
        assert.deepStrictEqual(executableNames('win32', { PATHEXT: '.COM;.EXE' }), ['kernel-lsp.exe', 'kernel-lsp.com']);
        assert.deepStrictEqual(executableNames('darwin', {}), ['kernel-lsp']);
        const r = discoverServer(
            input(['C:\\tools\\kernel-lsp.exe'], {
                platform: 'win32',
                extensionPath: 'C:\\ext',
                env: { Path: 'C:\\Windows;"C:\\tools"' },
                home: 'C:\\Users\\u',
                workspaceFolder: 'C:\\proj',
            }),
        );
        assert.deepStrictEqual(r, { found: true, path: 'C:\\tools\\kernel-lsp.exe', source: 'PATH' });
        const bundled = discoverServer(input(['C:\\ext\\bin\\kernel-lsp.exe'], { platform: 'win32', extensionPath: 'C:\\ext', env: {} }));
        assert.deepStrictEqual(bundled, { found: true, path: 'C:\\ext\\bin\\kernel-lsp.exe', source: 'bundled' });
    });

    it('expandPath leaves plain names and absolute paths alone', () => {
        const ctx = { platform: 'linux' as const, home: '/h', workspaceFolder: '/w' };
        assert.strictEqual(expandPath('python3', ctx), 'python3');
        assert.strictEqual(expandPath('/usr/bin/python3', ctx), '/usr/bin/python3');
        assert.strictEqual(expandPath('.venv/bin/python', ctx), '/w/.venv/bin/python');
        assert.strictEqual(expandPath('~', ctx), '/h');
        assert.strictEqual(expandPath('${userHome}/x', ctx), '/h/x');
        assert.strictEqual(expandPath('.venv/bin/python', { platform: 'linux' }), '.venv/bin/python');
    });
});
