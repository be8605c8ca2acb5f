import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import {
    discoverServer,
    Discovery,
    DiscoveryInput,
    executableNames,
    expandPath,
    ScopedSetting,
    settingFromInspect,
} from '../src/discovery';

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

const user = (value: string): ScopedSetting => ({ value, scope: 'User settings' });

/** Where it was found, without the setting it came from. */
function where(r: Discovery): { found: boolean; path?: string; source?: string } {
    return r.found ? { found: true, path: r.path, source: r.source } : { found: false };
}

describe('server discovery', () => {
    it('prefers the kernelLsp.path setting, and says which scope it came from', () => {
        const setting = user('/opt/kl/kernel-lsp');
        const r = discoverServer(input(['/opt/kl/kernel-lsp', '/ext/bin/kernel-lsp', '/usr/bin/kernel-lsp'], { setting }));
        assert.deepStrictEqual(r, { found: true, path: '/opt/kl/kernel-lsp', source: 'setting', setting });
    });

    it('expands ~ and ${workspaceFolder} in the setting, and takes relative paths from the workspace', () => {
        assert.deepStrictEqual(
            where(discoverServer(input(['/home/u/.cargo/bin/kernel-lsp'], { setting: user('~/.cargo/bin/kernel-lsp') }))),
            { found: true, path: '/home/u/.cargo/bin/kernel-lsp', source: 'setting' },
        );
        assert.deepStrictEqual(
            where(discoverServer(input(['/work/proj/target/debug/kernel-lsp'], { setting: user('${workspaceFolder}/target/debug/kernel-lsp') }))),
            { found: true, path: '/work/proj/target/debug/kernel-lsp', source: 'setting' },
        );
        assert.deepStrictEqual(
            where(discoverServer(input(['/work/proj/target/release/kernel-lsp'], { setting: user('target/release/kernel-lsp') }))),
            { found: true, path: '/work/proj/target/release/kernel-lsp', source: 'setting' },
        );
    });

    it('looks a bare name in the setting up on PATH', () => {
        const r = discoverServer(input(['/usr/bin/kernel-lsp-nightly'], { setting: user('kernel-lsp-nightly') }));
        assert.deepStrictEqual(where(r), { found: true, path: '/usr/bin/kernel-lsp-nightly', source: 'setting' });
        const missing = discoverServer(input([], { setting: user('kernel-lsp-nightly') }));
        assert.strictEqual(missing.found, false);
        if (!missing.found) {
            assert.deepStrictEqual(missing.places, [
                'kernelLsp.path = "kernel-lsp-nightly" (User settings): no executable "kernel-lsp-nightly" on PATH (/usr/local/bin:/usr/bin)',
            ]);
        }
    });

    it('does not fall back silently when the setting points nowhere, and names its value and scope', () => {
        for (const scope of ['User settings', 'Workspace settings', 'Workspace Folder settings'] as const) {
            const r = discoverServer(input(['/ext/bin/kernel-lsp'], { setting: { value: '/nope/kernel-lsp', scope } }));
            assert.strictEqual(r.found, false);
            if (!r.found) {
                assert.deepStrictEqual(r.tried, ['/nope/kernel-lsp']);
                assert.deepStrictEqual(r.places, [`kernelLsp.path = "/nope/kernel-lsp" (${scope}): no executable file at /nope/kernel-lsp`]);
                assert.ok(
                    r.message.startsWith(`The kernel-lsp server binary was not found. Looked at: kernelLsp.path = "/nope/kernel-lsp" (${scope})`),
                    r.message,
                );
                assert.match(r.message, new RegExp(`Fix kernelLsp\\.path in your ${scope}`));
            }
        }
    });

    it('uses the bundled binary before PATH, and treats a blank setting as unset', () => {
        const r = discoverServer(input(['/ext/bin/kernel-lsp', '/usr/bin/kernel-lsp'], { setting: user('  ') }));
        assert.deepStrictEqual(r, { found: true, path: '/ext/bin/kernel-lsp', source: 'bundled' });
    });

    it('searches PATH in order', () => {
        const r = discoverServer(input(['/usr/bin/kernel-lsp', '/usr/local/bin/kernel-lsp']));
        assert.deepStrictEqual(r, { found: true, path: '/usr/local/bin/kernel-lsp', source: 'PATH' });
    });

    it('says every place it looked when nothing is found, the setting first', () => {
        const r = discoverServer(input([], { env: { PATH: '/a::/b' } }));
        assert.strictEqual(r.found, false);
        if (!r.found) {
            assert.deepStrictEqual(r.tried, ['/ext/bin/kernel-lsp', '/a/kernel-lsp', '/b/kernel-lsp']);
            assert.deepStrictEqual(r.places, [
                'kernelLsp.path: not set (User, Workspace or Workspace Folder settings)',
                'the bundled binary: /ext/bin/kernel-lsp',
                'kernel-lsp on PATH: /a:/b',
            ]);
            assert.strictEqual(
                r.message,
                'The kernel-lsp server binary was not found. Looked at: ' +
                    'kernelLsp.path: not set (User, Workspace or Workspace Folder settings); ' +
                    'the bundled binary: /ext/bin/kernel-lsp; kernel-lsp on PATH: /a:/b. ' +
                    'Set kernelLsp.path to the binary, or install kernel-lsp (`cargo install --path server` in the kernel-lsp repository) so that it is on PATH.',
            );
        }
        const noPath = discoverServer(input([], { env: {} }));
        assert.strictEqual(noPath.found, false);
        if (!noPath.found) {
            assert.strictEqual(noPath.places[2], 'kernel-lsp on PATH: PATH is empty');
        }
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

describe('the kernelLsp.path setting, from any scope', () => {
    it('reads inspect(): Workspace Folder over Workspace over User, naming the scope', () => {
        assert.deepStrictEqual(settingFromInspect({ globalValue: '/u/kl' }), { value: '/u/kl', scope: 'User settings' });
        assert.deepStrictEqual(settingFromInspect({ globalValue: '/u/kl', workspaceValue: '/w/kl' }), {
            value: '/w/kl',
            scope: 'Workspace settings',
        });
        assert.deepStrictEqual(settingFromInspect({ globalValue: '/u/kl', workspaceValue: '/w/kl', workspaceFolderValue: '/f/kl' }), {
            value: '/f/kl',
            scope: 'Workspace Folder settings',
        });
    });

    it('skips scopes that leave it unset (null, blank, not a string)', () => {
        assert.strictEqual(settingFromInspect(undefined), undefined);
        assert.strictEqual(settingFromInspect({}), undefined);
        assert.strictEqual(settingFromInspect({ globalValue: null, workspaceValue: '  ' }), undefined);
        assert.deepStrictEqual(settingFromInspect({ globalValue: '/u/kl', workspaceValue: null, workspaceFolderValue: '' }), {
            value: '/u/kl',
            scope: 'User settings',
        });
        assert.strictEqual(settingFromInspect({ globalValue: 42 }), undefined);
    });

    it('a path in User settings is found the same way on every start', () => {
        const inspected = { globalValue: '/opt/kl/kernel-lsp', defaultValue: null };
        const results = Array.from({ length: 11 }, () =>
            discoverServer(input(['/opt/kl/kernel-lsp'], { setting: settingFromInspect(inspected) })),
        );
        for (const r of results) {
            assert.deepStrictEqual(r, { found: true, path: '/opt/kl/kernel-lsp', source: 'setting', setting: user('/opt/kl/kernel-lsp') });
        }
    });

    it('package.json gives kernelLsp.path and kernelLsp.python `resource` scope: applied from User, Workspace and Folder settings, in remote windows too', () => {
        // VS Code drops User settings of `machine` and `machine-overridable`
        // scope in a remote window (code-server is one): LOCAL_MACHINE_SCOPES
        // are application, window, resource and language-overridable. Whether
        // they were dropped before the extension read them depended on when
        // its settings schema was registered: the flaky "not found". Folder
        // settings take resource, language-overridable and machine-overridable.
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
            contributes: { configuration: { properties: Record<string, { scope?: string }> } };
        };
        for (const key of ['kernelLsp.path', 'kernelLsp.python']) {
            assert.strictEqual(pkg.contributes.configuration.properties[key]?.scope, 'resource', key);
        }
    });
});
