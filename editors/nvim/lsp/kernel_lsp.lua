-- kernel-lsp: the language server for Triton GPU kernels, as a Neovim 0.11
-- `vim.lsp.config` definition. With this plugin on the runtimepath and the
-- `kernel-lsp` binary on PATH, `vim.lsp.enable('kernel_lsp')` is all it takes.
--
-- It attaches to Python buffers that mention `triton` (anywhere in the
-- buffer); set `vim.g.kernel_lsp_only_triton = false` (or
-- `require('kernel_lsp').setup({ only_triton = false })`) to attach to every
-- Python buffer. A buffer that gains its first `triton` later attaches after
-- `:edit`.
--
-- Override any field with `vim.lsp.config('kernel_lsp', { ... })`, e.g.
--   vim.lsp.config('kernel_lsp', { cmd = { '/path/to/kernel-lsp', 'serve' } })
--   vim.lsp.config('kernel_lsp', { settings = { ['kernel-lsp'] = { ['target-gpu'] = 'a100' } } })

local root_markers = { 'kernel-lsp.toml', 'pyproject.toml', '.git' }

-- The user commands (:KernelBench, :KernelBenchCancel, ...) and autocommands.
-- plugin/kernel_lsp.lua defines them at startup; this file is read when
-- `vim.lsp.enable('kernel_lsp')` (or a buffer's FileType) resolves the config,
-- which also covers a runtimepath added after startup. Idempotent.
pcall(function()
  require('kernel_lsp.commands').define()
end)

--- Whether the buffer looks like a Triton kernel file.
---@param bufnr integer
---@return boolean
local function mentions_triton(bufnr)
  if vim.g.kernel_lsp_only_triton == false then
    return true
  end
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for _, line in ipairs(lines) do
    if line:find('triton', 1, true) then
      return true
    end
  end
  return false
end

--- Empty Lua tables encode as JSON arrays; the server wants objects for the
--- settings table and its `bench` / `llm` sections.
local function as_object(t)
  if type(t) ~= 'table' then
    return vim.empty_dict()
  end
  if next(t) == nil then
    return vim.empty_dict()
  end
  for _, key in ipairs({ 'bench', 'llm' }) do
    if type(t[key]) == 'table' and next(t[key]) == nil then
      t[key] = vim.empty_dict()
    end
  end
  return t
end

---@type vim.lsp.Config
return {
  cmd = { 'kernel-lsp', 'serve' },
  filetypes = { 'python' },
  root_markers = root_markers,

  -- Attach only to buffers that mention triton; the root is the nearest
  -- directory with a root marker, else the file's own directory.
  root_dir = function(bufnr, on_dir)
    if not mentions_triton(bufnr) then
      return
    end
    local name = vim.api.nvim_buf_get_name(bufnr)
    local root = vim.fs.root(bufnr, root_markers)
      or (name ~= '' and vim.fs.dirname(name))
      or vim.uv.cwd()
    on_dir(root)
  end,

  -- Server settings, kebab-case keys as in kernel-lsp.toml (see the README):
  --   settings = { ['kernel-lsp'] = { python = '.venv/bin/python', ['target-gpu'] = 'h100',
  --                                    bench = { timeout = 120 }, llm = { model = 'gpt-4o' } } }
  -- They are sent as initialization options and answered to workspace/configuration;
  -- keys left out keep the project's kernel-lsp.toml / pyproject.toml value.
  settings = {},

  before_init = function(params, config)
    local settings = config.settings or {}
    params.initializationOptions = as_object(settings['kernel-lsp'])
    if settings['kernel-lsp'] ~= nil then
      settings['kernel-lsp'] = params.initializationOptions
    end
  end,

  -- Client-side handling of the server's commands that return something to
  -- show (code lenses and code actions run these).
  commands = {
    -- The lens, and KL914's actions ({ reduced = true } / { full_size = true }).
    ['kernel-lsp.benchmark'] = function(command, ctx)
      local options = (command.arguments or {})[2]
      require('kernel_lsp').benchmark({ bufnr = ctx.bufnr, options = type(options) == 'table' and options or nil })
    end,
    -- An LLM rewrite from a code action: the same path as :KernelPersistent
    -- (saves first, shows an error once, previews the edit).
    ['kernel-lsp.rewrite'] = function(command, ctx)
      local args = command.arguments or {}
      require('kernel_lsp').rewrite(type(args[2]) == 'string' and args[2] or 'persistent', {
        bufnr = ctx.bufnr,
        range = type(args[3]) == 'table' and args[3] or nil,
        options = type(args[4]) == 'table' and args[4] or nil,
      })
    end,
    ['kernel-lsp.explain'] = function(command, ctx)
      require('kernel_lsp').explain((command.arguments or {})[1], { bufnr = ctx.bufnr })
    end,
    -- Informational lenses ("persistent kernel · 1 launch site") have no command.
    [''] = function() end,
  },

  -- Neovim 0.11 pulls diagnostics (textDocument/diagnostic) but does not
  -- answer `workspace/diagnostic/refresh`, so a pulling client would only see
  -- what changed without an edit (a benchmark's KL9xx findings) after its next
  -- edit. With refresh support the server asks, and the handler below pulls.
  capabilities = {
    workspace = { diagnostics = { refreshSupport = true } },
  },

  handlers = {
    ['workspace/diagnostic/refresh'] = function(err, result, ctx)
      return require('kernel_lsp').on_diagnostic_refresh(err, result, ctx)
    end,
    -- An edit whose change annotation asks for confirmation (an LLM rewrite)
    -- is shown as a diff in a split and applied only after you agree.
    ['workspace/applyEdit'] = function(err, params, ctx)
      return require('kernel_lsp').on_apply_edit(err, params, ctx)
    end,
  },
}
