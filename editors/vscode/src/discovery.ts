/**
 * Finding the `kernel-lsp` binary: the `kernelLsp.path` setting (from any
 * settings scope), then the binary bundled in the extension
 * (`bin/kernel-lsp`), then `PATH`. Pure: the setting, the file system and the
 * environment are passed in, so it is unit-tested without VS Code.
 */
import * as path from 'path';

export type ServerSource = 'setting' | 'bundled' | 'PATH';

/** Where a setting's value comes from, in VS Code's words. */
export type SettingScope = 'Workspace Folder settings' | 'Workspace settings' | 'User settings';

/** A setting's value and the scope it was read from. */
export interface ScopedSetting {
    value: string;
    scope: SettingScope;
}

/** The part of `WorkspaceConfiguration.inspect()` that discovery reads. */
export interface InspectedSetting {
    globalValue?: unknown;
    workspaceValue?: unknown;
    workspaceFolderValue?: unknown;
}

/**
 * The value of a path setting and its scope, from `inspect()`: the most
 * specific scope (folder, then workspace, then user) that holds a non-blank
 * string. Undefined when no scope sets it.
 */
export function settingFromInspect(inspected: InspectedSetting | undefined): ScopedSetting | undefined {
    if (!inspected) {
        return undefined;
    }
    const scopes: [unknown, SettingScope][] = [
        [inspected.workspaceFolderValue, 'Workspace Folder settings'],
        [inspected.workspaceValue, 'Workspace settings'],
        [inspected.globalValue, 'User settings'],
    ];
    for (const [value, scope] of scopes) {
        if (typeof value === 'string' && value.trim().length > 0) {
            return { value, scope };
        }
    }
    return undefined;
}

export interface DiscoveryInput {
    /** The `kernelLsp.path` setting and its scope; undefined when unset. */
    setting?: ScopedSetting;
    /** The extension's install directory. */
    extensionPath: string;
    env: Record<string, string | undefined>;
    platform: NodeJS.Platform;
    /** The user's home directory, for `~` in the setting. */
    home?: string;
    /** The first workspace folder, for `${workspaceFolder}` and relative settings. */
    workspaceFolder?: string;
    /** Whether `p` is an executable file. */
    isExecutable: (p: string) => boolean;
}

export type Discovery =
    | { found: true; path: string; source: ServerSource; setting?: ScopedSetting }
    | {
          found: false;
          message: string;
          /** Every path looked at, in order. */
          tried: string[];
          /** Every place looked, in order, the setting first: one line each. */
          places: string[];
      };

export const BINARY = 'kernel-lsp';

function pathApi(platform: NodeJS.Platform): path.PlatformPath {
    return platform === 'win32' ? path.win32 : path.posix;
}

/** Expands `~` and `${workspaceFolder}`/`${userHome}`; a relative path is taken from the workspace folder. */
export function expandPath(
    value: string,
    opts: { platform: NodeJS.Platform; home?: string; workspaceFolder?: string },
): string {
    const p = pathApi(opts.platform);
    let v = value.trim();
    if (opts.workspaceFolder !== undefined) {
        v = v.split('${workspaceFolder}').join(opts.workspaceFolder);
    }
    if (opts.home !== undefined) {
        v = v.split('${userHome}').join(opts.home);
        if (v === '~') {
            v = opts.home;
        } else if (v.startsWith('~/') || (opts.platform === 'win32' && v.startsWith('~\\'))) {
            v = p.join(opts.home, v.slice(2));
        }
    }
    if (!p.isAbsolute(v) && opts.workspaceFolder !== undefined && (v.includes('/') || v.includes(p.sep))) {
        v = p.join(opts.workspaceFolder, v);
    }
    return v;
}

/** The file names the binary can have on this platform. */
export function executableNames(platform: NodeJS.Platform, env: Record<string, string | undefined>): string[] {
    if (platform !== 'win32') {
        return [BINARY];
    }
    const exts = (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM')
        .split(';')
        .map((e) => e.trim().toLowerCase())
        .filter((e) => e.length > 0);
    return [...new Set(['.exe', ...exts])].map((e) => BINARY + e);
}

function envPath(env: Record<string, string | undefined>, platform: NodeJS.Platform): string | undefined {
    if (platform === 'win32') {
        // Windows environment variables are case-insensitive: `Path` is common.
        const key = Object.keys(env).find((k) => k.toUpperCase() === 'PATH');
        return key === undefined ? undefined : env[key];
    }
    return env.PATH;
}

const SETTING = 'kernelLsp.path';

export function discoverServer(input: DiscoveryInput): Discovery {
    const p = pathApi(input.platform);
    const names = executableNames(input.platform, input.env);
    const tried: string[] = [];
    const places: string[] = [];

    const setting = input.setting && input.setting.value.trim() ? input.setting : undefined;
    if (setting) {
        const configured = setting.value.trim();
        const full = expandPath(configured, input);
        // A bare name (`kernel-lsp-nightly`) is looked up on PATH.
        const bare = !(full.includes('/') || full.includes('\\'));
        const candidates = bare ? searchPath(full) : [full];
        for (const c of candidates) {
            tried.push(c);
            if (input.isExecutable(c)) {
                return { found: true, path: c, source: 'setting', setting };
            }
        }
        const where = bare
            ? `no executable "${full}" on PATH (${searchDirs().join(input.platform === 'win32' ? ';' : ':') || 'PATH is empty'})`
            : `no executable file at ${full}`;
        places.push(`${SETTING} = "${configured}" (${setting.scope}): ${where}`);
        return {
            found: false,
            tried,
            places,
            message:
                `The kernel-lsp server binary was not found. Looked at: ${places.join('; ')}. ` +
                `Fix ${SETTING} in your ${setting.scope}, or clear it to use the bundled binary or the one on PATH.`,
        };
    }
    places.push(`${SETTING}: not set (User, Workspace or Workspace Folder settings)`);

    const bundledTried: string[] = [];
    for (const name of names) {
        const bundled = p.join(input.extensionPath, 'bin', name);
        tried.push(bundled);
        bundledTried.push(bundled);
        if (input.isExecutable(bundled)) {
            return { found: true, path: bundled, source: 'bundled' };
        }
    }
    places.push(`the bundled binary: ${bundledTried.join(', ')}`);

    const dirs = searchDirs();
    for (const name of names) {
        for (const c of searchPath(name)) {
            tried.push(c);
            if (input.isExecutable(c)) {
                return { found: true, path: c, source: 'PATH' };
            }
        }
    }
    places.push(dirs.length > 0 ? `${names.join(' or ')} on PATH: ${dirs.join(input.platform === 'win32' ? ';' : ':')}` : `${names.join(' or ')} on PATH: PATH is empty`);
    return {
        found: false,
        tried,
        places,
        message:
            `The kernel-lsp server binary was not found. Looked at: ${places.join('; ')}. ` +
            `Set ${SETTING} to the binary, or install kernel-lsp (\`cargo install --path server\` in the kernel-lsp repository) so that it is on PATH.`,
    };

    function searchDirs(): string[] {
        const delimiter = input.platform === 'win32' ? ';' : ':';
        return (envPath(input.env, input.platform) ?? '')
            .split(delimiter)
            .map((d) => d.trim().replace(/^"(.*)"$/, '$1'))
            .filter((d) => d.length > 0);
    }

    function searchPath(name: string): string[] {
        return searchDirs().map((d) => p.join(d, name));
    }
}
