-- kernel-lsp's user commands (:KernelBench, :KernelBenchCancel, ...) and its
-- autocommands (inlay hints and code lenses on attach, progress, the missing
-- binary message).
--
-- `define()` is idempotent and is called from every way the plugin can be
-- loaded: plugin/kernel_lsp.lua at startup, `require('kernel_lsp')`, and the
-- lsp/kernel_lsp.lua config when `vim.lsp.enable('kernel_lsp')` (or opening a
-- file) resolves it. So a runtimepath added after startup (`nvim -u NONE`,
-- `:set rtp+=...`, lazy loading), where plugin/ is never sourced, still gets
-- the commands.

local M = {}

local function kl()
  return require('kernel_lsp')
end

--- The rule codes :KernelExplain completes.
local function rule_codes()
  local codes = {}
  for i = 1, 10 do
    codes[#codes + 1] = string.format('KL%03d', i)
  end
  for i = 101, 109 do
    codes[#codes + 1] = 'KL' .. i
  end
  for i = 901, 914 do
    codes[#codes + 1] = 'KL' .. i
  end
  return codes
end

local function define_commands()
  local command = vim.api.nvim_create_user_command

  -- :KernelBench small checks correctness on the CPU interpreter at reduced
  -- sizes; :KernelBench full runs the CPU interpreter at the task's sizes even
  -- where the size guard (KL914) refuses them.
  local bench_modes = { small = { reduced = true }, full = { cpu = true, full_size = true } }
  command('KernelBench', function(a)
    if a.args ~= '' and not bench_modes[a.args] then
      require('kernel_lsp.ui').notify(':KernelBench takes no argument, `small` or `full`, not ' .. a.args, vim.log.levels.ERROR)
      return
    end
    kl().benchmark({ options = bench_modes[a.args] })
  end, {
    nargs = '?',
    complete = function()
      return { 'small', 'full' }
    end,
    desc = 'kernel-lsp: benchmark this file against its PyTorch reference ([small|full] on the CPU interpreter)',
  })

  command('KernelBenchCancel', function()
    kl().cancel()
  end, { desc = "kernel-lsp: stop this buffer's running benchmark" })

  command('KernelPersistent', function(a)
    local opts = {}
    if a.range > 0 then
      opts.line1, opts.line2 = a.line1, a.line2
    end
    kl().rewrite('persistent', opts)
  end, { range = true, desc = 'kernel-lsp: LLM rewrite into a persistent kernel (diff shown before applying)' })

  command('KernelHistory', function()
    kl().history('history')
  end, { desc = "kernel-lsp: this kernel's benchmark score history" })

  command('KernelTimeline', function()
    kl().history('timeline')
  end, { desc = "kernel-lsp: this kernel's rewrite timeline" })

  local codes = rule_codes()
  command('KernelExplain', function(a)
    kl().explain(a.args ~= '' and a.args or nil)
  end, {
    nargs = '?',
    complete = function(lead)
      return vim.tbl_filter(function(c)
        return c:find(lead:upper(), 1, true) == 1
      end, codes)
    end,
    desc = 'kernel-lsp: explain a rule (default: the diagnostic under the cursor)',
  })

  command('KernelFixAll', function()
    kl().fix_all()
  end, { desc = 'kernel-lsp: apply every safe fix in this buffer' })
end

local function kernel_client(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  return client and client.name == 'kernel_lsp' and client or nil
end

local function define_autocmds()
  local group = vim.api.nvim_create_augroup('kernel_lsp', { clear = true })

  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'python',
    desc = 'kernel-lsp: say once when the server binary cannot be started',
    callback = function(ev)
      kl().check_binary(ev.buf)
    end,
  })

  vim.api.nvim_create_autocmd('LspAttach', {
    group = group,
    desc = 'kernel-lsp: inlay hints and code lenses',
    callback = function(ev)
      local client = kernel_client(ev)
      if client then
        kl().on_attach(client, ev.buf)
      end
    end,
  })

  vim.api.nvim_create_autocmd('LspDetach', {
    group = group,
    callback = function(ev)
      local client = kernel_client(ev)
      if client then
        kl().on_detach(client, ev.buf)
      end
    end,
  })

  vim.api.nvim_create_autocmd('LspProgress', {
    group = group,
    desc = 'kernel-lsp: show benchmark progress',
    callback = function(ev)
      if kernel_client(ev) then
        kl().on_progress(ev)
      end
    end,
  })
end

--- Defines the commands and autocommands, once; later calls do nothing.
--- Returns whether they are defined (false on a Neovim older than 0.11).
---@return boolean
function M.define()
  if M.defined then
    return true
  end
  if vim.fn.has('nvim-0.11') == 0 then
    if not M.warned then
      M.warned = true
      vim.notify('kernel-lsp needs Neovim 0.11 or newer', vim.log.levels.WARN)
    end
    return false
  end
  M.defined = true
  vim.g.loaded_kernel_lsp = true
  define_commands()
  define_autocmds()
  if vim.v.vim_did_enter == 1 then
    -- Defined late (the runtimepath was added after startup): what the
    -- autocommands above would have done for the buffers already there.
    vim.schedule(function()
      for _, client in ipairs(vim.lsp.get_clients({ name = 'kernel_lsp' })) do
        for bufnr in pairs(client.attached_buffers) do
          kl().on_attach(client, bufnr)
        end
      end
      for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(bufnr) and vim.bo[bufnr].filetype == 'python' then
          kl().check_binary(bufnr)
        end
      end
    end)
  end
  return true
end

return M
