/**
 * Finding the `kernel-lsp` binary: the `kernelLsp.path` setting, then the
 * binary bundled in the extension (`bin/kernel-lsp`), then `PATH`. Pure: the
 * file system and environment are passed in, so it is unit-tested without
 * VS Code.
 */
import * as path from 'path';

export type ServerSource = 'setting' | 'bundled' | 'PATH';

export interface DiscoveryInput {
    /** The `kernelLsp.path` setting; empty or undefined when unset. */
    configured?: string;
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
    | { found: true; path: string; source: ServerSource }
    | { found: false; message: string; tried: string[] };

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

export function discoverServer(input: DiscoveryInput): Discovery {
    const p = pathApi(input.platform);
    const names = executableNames(input.platform, input.env);
    const tried: string[] = [];

    const configured = input.configured?.trim();
    if (configured) {
        const full = expandPath(configured, input);
        // A bare name (`kernel-lsp-nightly`) is looked up on PATH.
        const candidates = full.includes('/') || full.includes('\\') ? [full] : searchPath(full);
        for (const c of candidates) {
            tried.push(c);
            if (input.isExecutable(c)) {
                return { found: true, path: c, source: 'setting' };
            }
        }
        return {
            found: false,
            tried,
            message: `kernelLsp.path is set to "${configured}", but no executable file is there. Fix the setting or clear it to use the bundled binary or the one on PATH.`,
        };
    }

    for (const name of names) {
        const bundled = p.join(input.extensionPath, 'bin', name);
        tried.push(bundled);
        if (input.isExecutable(bundled)) {
            return { found: true, path: bundled, source: 'bundled' };
        }
    }

    for (const name of names) {
        for (const c of searchPath(name)) {
            tried.push(c);
            if (input.isExecutable(c)) {
                return { found: true, path: c, source: 'PATH' };
            }
        }
    }
    return {
        found: false,
        tried,
        message:
            'The kernel-lsp server binary was not found: set kernelLsp.path, or install kernel-lsp ' +
            '(`cargo install --path server` in the kernel-lsp repository) so that it is on PATH.',
    };

    function searchPath(name: string): string[] {
        const delimiter = input.platform === 'win32' ? ';' : ':';
        return (envPath(input.env, input.platform) ?? '')
            .split(delimiter)
            .map((d) => d.trim().replace(/^"(.*)"$/, '$1'))
            .filter((d) => d.length > 0)
            .map((d) => p.join(d, name));
    }
}
