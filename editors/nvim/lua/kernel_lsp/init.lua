-- kernel-lsp for Neovim 0.11+: options, and the commands behind :KernelBench,
-- :KernelBenchCancel, :KernelPersistent, :KernelHistory, :KernelTimeline,
-- :KernelExplain and :KernelFixAll (defined by lua/kernel_lsp/commands.lua,
-- which requiring this module runs too).

local ui = require('kernel_lsp.ui')

local M = {}

local NAME = 'kernel_lsp'

---@param bufnr? integer
---@return integer
local function resolve(bufnr)
  if bufnr == nil or bufnr == 0 then
    return vim.api.nvim_get_current_buf()
  end
  return bufnr
end

---@class kernel_lsp.Options
---@field cmd? string|string[]   the server command (a path is given `serve`)
---@field settings? table        server settings, kebab-case keys (`{ ['target-gpu'] = 'a100' }`)
---@field python? string         interpreter with torch + triton, for benchmarks
---@field target_gpu? string     h100, h200, a100, l4, ...
---@field inlay_hints? boolean   enable inlay hints in kernel buffers (default true)
---@field codelens? boolean      refresh code lenses on attach, InsertLeave, BufWritePost (default true)
---@field only_triton? boolean   attach only to Python buffers that mention triton (default true)
---@field save_before_bench? boolean  write a modified buffer before :KernelBench (default true)
---@field progress? boolean      echo `$/progress` messages (default true)
---@field confirm? fun(message: string): boolean  asks before applying a rewrite
---@field preview_annotated_edits? boolean  preview code-action edits that need confirmation (default true)
---@field enable? boolean        call vim.lsp.enable (default true)

---@type kernel_lsp.Options
M.config = {
  inlay_hints = true,
  codelens = true,
  only_triton = true,
  save_before_bench = true,
  progress = true,
  preview_annotated_edits = true,
  confirm = function(message)
    return vim.fn.confirm(message, '&Apply\n&Cancel', 2) == 1
  end,
}

--- Configures the server (`vim.lsp.config`) and enables it (`vim.lsp.enable`).
---@param opts? kernel_lsp.Options
function M.setup(opts)
  opts = opts or {}
  for _, key in ipairs({ 'inlay_hints', 'codelens', 'only_triton', 'save_before_bench', 'progress', 'confirm', 'preview_annotated_edits' }) do
    if opts[key] ~= nil then
      M.config[key] = opts[key]
    end
  end
  vim.g.kernel_lsp_only_triton = M.config.only_triton

  local settings = vim.deepcopy(opts.settings or {})
  -- Accept both `{ ['kernel-lsp'] = {...} }` and the inner table.
  if settings['kernel-lsp'] then
    settings = settings['kernel-lsp']
  end
  if opts.python then
    settings.python = opts.python
  end
  if opts.target_gpu then
    settings['target-gpu'] = opts.target_gpu
  end

  local cfg = {}
  if opts.cmd then
    cfg.cmd = type(opts.cmd) == 'string' and { opts.cmd, 'serve' } or opts.cmd
  end
  if next(settings) then
    cfg.settings = { ['kernel-lsp'] = settings }
  end
  vim.lsp.config(NAME, cfg)
  if opts.enable ~= false then
    vim.lsp.enable(NAME)
  end
end

-- A server that cannot start ---------------------------------------------------

--- The message shown when the server binary cannot be started.
---@param exe string
---@return string
function M.missing_binary_message(exe)
  return string.format(
    'cannot start the server: `%s` is not an executable file%s. '
      .. "Set the `cmd` setting to the binary: require('kernel_lsp').setup({ cmd = '/path/to/kernel-lsp' }) "
      .. "or vim.lsp.config('kernel_lsp', { cmd = { '/path/to/kernel-lsp', 'serve' } }); "
      .. 'or put it on PATH with `cargo install --path server`. :checkhealth kernel_lsp says more.',
    exe,
    exe:find('/', 1, true) and '' or ' on PATH'
  )
end

--- vim.lsp.enable() passes over a config whose `cmd` is not executable and
--- only writes that to lsp.log, so nothing at all would show. Says it once
--- per session, for a buffer the server would attach to.
---@param bufnr integer
function M.check_binary(bufnr)
  if M._missing_binary_reported or not vim.lsp.is_enabled(NAME) or vim.bo[bufnr].buftype ~= '' then
    return
  end
  local config = vim.lsp.config[NAME]
  local cmd = config and config.cmd
  if type(cmd) ~= 'table' or type(cmd[1]) ~= 'string' or vim.fn.executable(cmd[1]) == 1 then
    return
  end
  local function report()
    if not M._missing_binary_reported then
      M._missing_binary_reported = true
      -- Not from inside the FileType autocommand: an error message there
      -- would abort the autocommands still to run for this buffer.
      vim.schedule(function()
        ui.notify(M.missing_binary_message(cmd[1]), vim.log.levels.ERROR)
      end)
    end
  end
  -- The config's own root_dir decides whether the server would attach (Triton buffers only).
  if type(config.root_dir) == 'function' then
    config.root_dir(bufnr, report)
  else
    report()
  end
end

-- Clients and requests --------------------------------------------------------

---@param bufnr? integer
---@param quiet? boolean
---@return vim.lsp.Client?
function M.client(bufnr, quiet)
  bufnr = resolve(bufnr)
  local client = vim.lsp.get_clients({ bufnr = bufnr, name = NAME })[1]
  if not client and not quiet then
    ui.notify(
      'kernel-lsp is not attached to this buffer. It attaches to Python files that mention triton, '
        .. 'once `vim.lsp.enable("kernel_lsp")` (or setup()) ran and `kernel-lsp` is on PATH; '
        .. 'see :checkhealth vim.lsp',
      vim.log.levels.ERROR
    )
  end
  return client
end

--- Whether the server already showed this error itself (window/showMessage)
--- and says so in the error's data (`{"shown": true}`): it is not shown twice.
---@param err table?
---@return boolean
function M.shown_by_server(err)
  return type(err) == 'table' and type(err.data) == 'table' and err.data.shown == true
end

--- Sends `workspace/executeCommand`; `on_result(result)` runs on success, an
--- error is shown (unless the server showed it already). Returns the request id.
---@return integer? request_id
local function execute(client, bufnr, command, arguments, on_result, token)
  local params = { command = command, arguments = arguments, workDoneToken = token }
  local ok, id = client:request('workspace/executeCommand', params, function(err, result)
    if err then
      -- A run stopped with :KernelBenchCancel answers RequestCancelled; the
      -- cancel already said so.
      if err.code ~= vim.lsp.protocol.ErrorCodes.RequestCancelled and not M.shown_by_server(err) then
        ui.notify(string.format('%s: %s', command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      end
      if on_result then
        on_result(nil, err)
      end
      return
    end
    if on_result then
      on_result(result)
    end
  end, bufnr)
  if not ok then
    ui.notify(command .. ': the server is not running', vim.log.levels.ERROR)
    return nil
  end
  return id
end
M._execute = execute

local function uri_of(bufnr)
  return vim.uri_from_bufnr(bufnr)
end

-- :KernelBench -------------------------------------------------------------------

---@type table<integer, { client_id: integer, token: string, request_id: integer, finish: function }>
M.running = {}
local next_token = 0

--- One line that says how a benchmark went (the same words as the code lens).
function M.bench_summary(r)
  if type(r) ~= 'table' then
    return 'no result'
  end
  local correct = (r.correct == true and 'correct') or (r.correct == false and 'INCORRECT') or 'correctness unknown'
  local err = type(r.error) == 'table' and r.error or nil
  if r.mode == 'cpu-interpreter' then
    local s = correct .. ' (CPU interpreter, no timing)'
    if err then
      s = s .. ' · ' .. (err.kind or 'error') .. ': ' .. (err.message or '')
    end
    return s
  end
  local parts = {}
  if type(r.speedup) == 'number' then
    parts[#parts + 1] = string.format('%.2fx vs PyTorch', r.speedup)
  end
  if type(r.new_ms) == 'number' and type(r.ref_ms) == 'number' then
    parts[#parts + 1] = string.format('%.1f ms vs %.1f ms', r.new_ms, r.ref_ms)
  end
  parts[#parts + 1] = correct
  if type(r.launches_per_forward) == 'number' then
    parts[#parts + 1] = string.format('%d launch%s', r.launches_per_forward, r.launches_per_forward == 1 and '' or 'es')
  end
  if err then
    parts[#parts + 1] = (err.kind or 'error') .. ': ' .. (err.message or '')
  end
  return table.concat(parts, ' · ')
end

local function refresh_views(bufnr)
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
end
M.refresh_views = refresh_views

--- Pulls the buffer's diagnostics again (`textDocument/diagnostic`); the answer
--- goes to Neovim's own handler, into the client's pull namespace. Only for a
--- client that pulls: one that pushes sends them by itself.
---@param client vim.lsp.Client
---@param bufnr integer
function M.pull_diagnostics(client, bufnr)
  if not vim.api.nvim_buf_is_loaded(bufnr) or not client:supports_method('textDocument/diagnostic', bufnr) then
    return
  end
  client:request('textDocument/diagnostic', { textDocument = { uri = uri_of(bufnr) } }, nil, bufnr)
end

--- `workspace/diagnostic/refresh` from the server (after a benchmark, a
--- settings change, ...): pull again for every buffer it is attached to.
--- Neovim 0.11 has no handler of its own for it.
function M.on_diagnostic_refresh(_, _, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    for bufnr in pairs(client.attached_buffers) do
      M.pull_diagnostics(client, bufnr)
    end
  end
  return vim.NIL
end

--- Benchmarks the buffer's file against its reference (kernel-lsp.benchmark).
--- Progress shows through LspProgress; the result lands on `ModelNew`'s code lens.
--- `opts.options` is the command's options table (`{ cpu = true }`).
---@param opts? { bufnr?: integer, options?: table, on_done?: fun(result: table?, err: table?) }
function M.benchmark(opts)
  opts = opts or {}
  local bufnr = resolve(opts.bufnr)
  local client = M.client(bufnr)
  if not client then
    return
  end
  if M.running[bufnr] then
    ui.notify('a benchmark of this buffer is already running (:KernelBenchCancel stops it)', vim.log.levels.WARN)
    return
  end
  if vim.bo[bufnr].modified and M.config.save_before_bench then
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd('silent update')
    end)
  end
  next_token = next_token + 1
  local token = string.format('kernel-lsp.nvim/benchmark/%d', next_token)
  local run = { client_id = client.id, token = token }
  -- Runs once: on the server's answer, or when the run is cancelled (Neovim
  -- does not pass a RequestCancelled answer on).
  function run.finish(result, err)
    if run.done then
      return
    end
    run.done = true
    if M.running[bufnr] == run then
      M.running[bufnr] = nil
    end
    if result then
      local level = (result.correct == true and not result.error) and vim.log.levels.INFO or vim.log.levels.WARN
      ui.notify('benchmark: ' .. M.bench_summary(result), level)
    end
    refresh_views(bufnr)
    if opts.on_done then
      opts.on_done(result, err)
    end
  end
  local id = execute(client, bufnr, 'kernel-lsp.benchmark', { uri_of(bufnr), opts.options }, run.finish, token)
  if id then
    run.request_id = id
    M.running[bufnr] = run
    ui.notify('benchmarking ' .. vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t') .. '…')
    refresh_views(bufnr)
  end
end

--- Stops the buffer's running benchmark: sends `window/workDoneProgress/cancel`
--- for the run's progress token (the server stops the harness and answers
--- the request with RequestCancelled).
function M.cancel(bufnr)
  bufnr = resolve(bufnr)
  local run = M.running[bufnr]
  if not run then
    ui.notify('no benchmark is running for this buffer', vim.log.levels.WARN)
    return
  end
  local client = vim.lsp.get_client_by_id(run.client_id)
  if client then
    client:notify('window/workDoneProgress/cancel', { token = run.token })
  end
  ui.notify('benchmark cancelled')
  run.finish(nil, { code = -32800, message = 'benchmark cancelled' })
end

-- :KernelPersistent ----------------------------------------------------------

--- Asks the server for an LLM rewrite (kernel-lsp.rewrite); the edit it comes
--- back with is shown as a diff and applied only if you agree.
--- `opts.range` is an LSP range (a code action's), `line1`/`line2` a command
--- range; `opts.options` the command's options (`{ cpu = true, set = { seq_len = 4 }, candidates = 1 }`).
---@param action string  e.g. "persistent"
---@param opts? { bufnr?: integer, line1?: integer, line2?: integer, range?: lsp.Range, options?: table, on_done?: fun(applied: boolean?, err: table?) }
function M.rewrite(action, opts)
  opts = opts or {}
  local bufnr = resolve(opts.bufnr)
  local client = M.client(bufnr)
  if not client then
    return
  end
  if vim.bo[bufnr].modified and M.config.save_before_bench then
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd('silent update')
    end)
  end
  local args = { uri_of(bufnr), action, opts.range }
  if opts.line1 and opts.line2 then
    local last = vim.api.nvim_buf_get_lines(bufnr, opts.line2 - 1, opts.line2, false)[1] or ''
    args[3] = {
      start = { line = opts.line1 - 1, character = 0 },
      ['end'] = { line = opts.line2 - 1, character = vim.str_utfindex(last, client.offset_encoding) },
    }
  end
  if opts.options then
    args[3] = args[3] or vim.NIL
    args[4] = opts.options
  end
  next_token = next_token + 1
  local token = string.format('kernel-lsp.nvim/rewrite/%d', next_token)
  ui.notify(string.format('asking for a %s rewrite (candidates are benchmarked before one is offered)…', action))
  execute(client, bufnr, 'kernel-lsp.rewrite', args, function(result, err)
    if err then
      if opts.on_done then
        opts.on_done(nil, err)
      end
      return
    end
    local edit = type(result) == 'table' and (result.edit or ((result.changes or result.documentChanges) and result))
    local applied = false
    if edit then
      local title = type(result.title) == 'string' and result.title
        or string.format('kernel-lsp: %s rewrite', action)
      if type(result.speedup) == 'number' then
        title = string.format('%s (%.2fx)', title, result.speedup)
      end
      applied = M.preview_edit(edit, client, { title = title })
    elseif result ~= nil and result ~= vim.NIL then
      ui.notify('rewrite: ' .. (type(result) == 'table' and (result.message or vim.inspect(result)) or tostring(result)))
    else
      ui.notify('rewrite: no better candidate was found', vim.log.levels.WARN)
    end
    refresh_views(bufnr)
    if opts.on_done then
      opts.on_done(applied)
    end
  end, token)
end

local function needs_confirmation(edit)
  for _, a in pairs(type(edit) == 'table' and edit.changeAnnotations or {}) do
    if type(a) == 'table' and a.needsConfirmation then
      return true
    end
  end
  return false
end

--- The label of the first change annotation that needs confirmation.
local function annotation_label(edit)
  for _, a in pairs(type(edit) == 'table' and edit.changeAnnotations or {}) do
    if type(a) == 'table' and a.needsConfirmation and type(a.label) == 'string' then
      return a.label
    end
  end
end

---@type fun(edit: lsp.WorkspaceEdit, offset_encoding: string)?
local original_apply

--- Shows a WorkspaceEdit as a unified diff in a split and applies it if
--- `config.confirm` says yes. Returns whether it was applied.
---@param edit lsp.WorkspaceEdit
---@param client vim.lsp.Client|string  the client, or its offset encoding
---@param opts? { title?: string }
---@return boolean
function M.preview_edit(edit, client, opts)
  opts = opts or {}
  local encoding = type(client) == 'string' and client or client.offset_encoding
  local title = opts.title or annotation_label(edit) or 'kernel-lsp rewrite'
  local diff = ui.edit_diff(edit, encoding)
  if diff == '' then
    ui.notify('the rewrite changes nothing', vim.log.levels.WARN)
    return false
  end
  local from = vim.api.nvim_get_current_win()
  local win = ui.show_diff(diff, title)
  local ok, yes = pcall(M.config.confirm, title .. ': apply this change?')
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_close(win, true)
  end
  if vim.api.nvim_win_is_valid(from) then
    vim.api.nvim_set_current_win(from)
  end
  if not ok or not yes then
    ui.notify('rewrite not applied')
    return false
  end
  ;(original_apply or vim.lsp.util.apply_workspace_edit)(edit, encoding)
  ui.notify('rewrite applied')
  return true
end

--- Neovim applies a code action's edit without looking at its change
--- annotations. Once kernel-lsp attaches, an edit with an annotation that
--- needs confirmation (the server's LLM rewrites) goes through the diff
--- preview instead; every other edit is applied exactly as before.
--- Off with `setup({ preview_annotated_edits = false })`.
function M.install_edit_preview()
  if original_apply or not M.config.preview_annotated_edits then
    return
  end
  original_apply = vim.lsp.util.apply_workspace_edit
  vim.lsp.util.apply_workspace_edit = function(edit, offset_encoding, ...)
    if needs_confirmation(edit) then
      M.preview_edit(edit, offset_encoding or 'utf-16')
      return
    end
    return original_apply(edit, offset_encoding, ...)
  end
end

--- `workspace/applyEdit` from the server: edits that need confirmation go
--- through the diff preview, the rest through Neovim's own handler.
function M.on_apply_edit(err, params, ctx)
  if params and needs_confirmation(params.edit) then
    local client = vim.lsp.get_client_by_id(ctx.client_id)
    if not client then
      return { applied = false, failureReason = 'client gone' }
    end
    local ok, applied = pcall(M.preview_edit, params.edit, client, { title = params.label })
    if not ok then
      return { applied = false, failureReason = tostring(applied) }
    end
    return { applied = applied, failureReason = (not applied) and 'declined by the user' or nil }
  end
  return vim.lsp.handlers['workspace/applyEdit'](err, params, ctx)
end

-- :KernelHistory, :KernelTimeline, :KernelExplain, :KernelFixAll ---------------

---@param kind 'history'|'timeline'
function M.history(kind, opts)
  opts = opts or {}
  local bufnr = resolve(opts.bufnr)
  local client = M.client(bufnr)
  if not client then
    return
  end
  execute(client, bufnr, 'kernel-lsp.' .. kind, { uri_of(bufnr) }, function(result)
    if type(result) ~= 'string' then
      return
    end
    local lines = vim.split(result, '\n', { trimempty = true })
    if #lines <= 2 then
      lines[#lines + 1] = ''
      lines[#lines + 1] = kind == 'history' and '_No runs recorded yet: run :KernelBench._'
        or '_No rewrites recorded yet: run :KernelPersistent._'
    end
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(bufnr), ':t')
    local title = (kind == 'history' and 'Score history' or 'Rewrite timeline') .. ': ' .. name
    table.insert(lines, 1, '# ' .. title)
    table.insert(lines, 2, '')
    ui.show_markdown(lines, { title = title, split = true, name = 'kernel-lsp://' .. kind })
    if opts.on_done then
      opts.on_done(result)
    end
  end)
end

--- The rule code of the kernel-lsp diagnostic under the cursor.
local function code_under_cursor(bufnr)
  local lnum = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, d in ipairs(vim.diagnostic.get(bufnr, { lnum = lnum })) do
    local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
    if type(code) == 'string' and code:match('^KL%d+$') then
      return code
    end
  end
end

--- Shows a rule's documentation (kernel-lsp.explain) in a floating window.
---@param code? string  e.g. "KL001"; default: the diagnostic under the cursor
function M.explain(code, opts)
  opts = opts or {}
  local bufnr = resolve(opts.bufnr)
  if not code or code == '' then
    code = code_under_cursor(bufnr)
    if not code then
      ui.notify('no kernel-lsp diagnostic on this line; give a code: :KernelExplain KL001', vim.log.levels.WARN)
      return
    end
  end
  code = code:upper()
  local client = M.client(bufnr, true) or vim.lsp.get_clients({ name = NAME })[1]
  if not client then
    M.client(bufnr) -- says why
    return
  end
  execute(client, bufnr, 'kernel-lsp.explain', { code }, function(result)
    if type(result) == 'string' then
      ui.show_markdown(vim.split(result, '\n'), { title = code, float = true })
    end
    if opts.on_done then
      opts.on_done(result)
    end
  end)
end

--- Applies every safe fix in the buffer (kernel-lsp.fixAll).
function M.fix_all(opts)
  opts = opts or {}
  local bufnr = resolve(opts.bufnr)
  local client = M.client(bufnr)
  if not client then
    return
  end
  execute(client, bufnr, 'kernel-lsp.fixAll', { uri_of(bufnr) }, function(result)
    if result == true then
      ui.notify('applied the safe fixes')
    elseif result == false then
      ui.notify('nothing to fix')
    end
    if opts.on_done then
      opts.on_done(result)
    end
  end)
end

-- Attach, progress ---------------------------------------------------------------

--- Set up a buffer the server attached to: inlay hints, code lens refresh.
function M.on_attach(client, bufnr)
  M.install_edit_preview()
  if M.config.inlay_hints and client:supports_method('textDocument/inlayHint') then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
  if M.config.codelens and client:supports_method('textDocument/codeLens') then
    local group = vim.api.nvim_create_augroup('kernel_lsp_codelens_' .. bufnr, { clear = true })
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
      group = group,
      buffer = bufnr,
      desc = 'kernel-lsp: refresh code lenses',
      callback = function()
        refresh_views(bufnr)
      end,
    })
    refresh_views(bufnr)
  end
end

function M.on_detach(client, bufnr)
  pcall(vim.api.nvim_del_augroup_by_name, 'kernel_lsp_codelens_' .. bufnr)
  M.running[bufnr] = nil
end

--- The last progress message, for a statusline: `%{v:lua.require'kernel_lsp'.status()}`.
M.progress = {}

function M.status()
  local p = M.progress.last
  if not p then
    return ''
  end
  return p
end

--- LspProgress from kernel-lsp: echo it, remember it for status().
function M.on_progress(ev)
  local value = ev.data and ev.data.params and ev.data.params.value
  if type(value) ~= 'table' then
    return
  end
  M.progress.title = value.kind == 'begin' and value.title or M.progress.title
  local text = (value.title or M.progress.title or 'kernel-lsp')
  if value.message and value.message ~= '' then
    text = text .. ': ' .. value.message
  end
  if value.percentage then
    text = string.format('%s (%d%%)', text, value.percentage)
  end
  M.progress.last = value.kind ~= 'end' and text or nil
  M.progress.events = M.progress.events or {}
  table.insert(M.progress.events, { kind = value.kind, text = text, token = ev.data.params.token })
  if #M.progress.events > 100 then
    table.remove(M.progress.events, 1)
  end
  if M.config.progress then
    -- Echoed, not kept in :messages; :KernelBench notifies the outcome itself.
    vim.api.nvim_echo({ { 'kernel-lsp: ' .. text } }, false, {})
  end
end

-- However the plugin was loaded (plugin/ at startup, or only this module
-- after a late `:set rtp+=`), requiring it defines the commands.
require('kernel_lsp.commands').define()

return M
