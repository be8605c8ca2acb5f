import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { configurationPayload, kebab, SERVER_SETTINGS, serverPath, toServerSettings } from '../src/settings';

const ctx = { platform: 'linux' as const, home: '/home/u', workspaceFolder: '/w' };
const from = (values: Record<string, unknown>) => (key: string) => values[key];

describe('settings -> server configuration', () => {
    it('converts camelCase keys to the server kebab-case keys', () => {
        assert.strictEqual(kebab('targetGpu'), 'target-gpu');
        assert.strictEqual(kebab('correctnessTrials'), 'correctness-trials');
        assert.strictEqual(kebab('apiKeyEnv'), 'api-key-env');
        assert.strictEqual(kebab('baseUrl'), 'base-url');
        assert.strictEqual(kebab('atol'), 'atol');
        assert.deepStrictEqual(serverPath('llm.maxTokens'), ['llm', 'max-tokens']);
    });

    it('sends nothing when nothing is set, so the project file wins', () => {
        assert.deepStrictEqual(toServerSettings(() => undefined, ctx), { settings: {}, problems: [] });
        assert.deepStrictEqual(configurationPayload({}), { 'kernel-lsp': {} });
    });

    it('maps every setting to the shape of kernel-lsp.toml', () => {
        const { settings, problems } = toServerSettings(
            from({
                select: ['kl00', 'KL010'],
                ignore: ['KL008'],
                targetGpu: 'a100',
                python: '${workspaceFolder}/.venv/bin/python',
                reference: 'ref.py',
                atol: 0.001,
                rtol: 0.002,
                'bench.warmup': 5,
                'bench.repeats': 20,
                'bench.timeout': 60.5,
                'bench.correctnessTrials': 2,
                'bench.tolerance': 'legacy',
                'bench.precision': 'bf16',
                'llm.baseUrl': 'https://api.example.com/v1',
                'llm.model': 'm',
                'llm.apiKeyEnv': 'OPENAI_API_KEY',
                'llm.candidates': 4,
                'llm.repairs': 1,
                'llm.timeout': 120,
                'llm.maxTokens': 8000,
                'llm.sandbox': 'bwrap',
                promptsDir: '~/prompts',
                path: '/ignored/client-only',
            }),
            ctx,
        );
        assert.deepStrictEqual(problems, []);
        assert.deepStrictEqual(settings, {
            select: ['KL00', 'KL010'],
            ignore: ['KL008'],
            'target-gpu': 'a100',
            python: '/w/.venv/bin/python',
            reference: 'ref.py',
            atol: 0.001,
            rtol: 0.002,
            bench: {
                warmup: 5,
                repeats: 20,
                timeout: 60.5,
                'correctness-trials': 2,
                tolerance: 'legacy',
                precision: 'bf16',
            },
            llm: {
                'base-url': 'https://api.example.com/v1',
                model: 'm',
                'api-key-env': 'OPENAI_API_KEY',
                candidates: 4,
                repairs: 1,
                timeout: 120,
                'max-tokens': 8000,
                sandbox: 'bwrap',
            },
            'prompts-dir': '/home/u/prompts',
        });
    });

    it('drops empty strings and reports invalid values instead of sending them', () => {
        const { settings, problems } = toServerSettings(
            from({ python: '  ', 'bench.repeats': 2.5, atol: 'abc', 'llm.timeout': 0, select: 'KL001, KL002', rtol: '0.05' }),
            ctx,
        );
        assert.deepStrictEqual(settings, { select: ['KL001', 'KL002'], rtol: 0.05 });
        assert.deepStrictEqual(problems, [
            'kernelLsp.atol: expected a number, got "abc"',
            'kernelLsp.bench.repeats: expected a whole number >= 0, got 2.5',
            'kernelLsp.llm.timeout: expected a number > 0, got 0',
        ]);
    });

    it('contributes every server setting in package.json, and nothing the server does not know', () => {
        const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as {
            contributes: { configuration: { properties: Record<string, unknown> } };
        };
        const contributed = Object.keys(pkg.contributes.configuration.properties)
            .map((k) => k.replace(/^kernelLsp\./, ''))
            .filter((k) => k !== 'path' && k !== 'trace.server');
        assert.deepStrictEqual(contributed.sort(), SERVER_SETTINGS.map((s) => s.key).sort());
    });
});
