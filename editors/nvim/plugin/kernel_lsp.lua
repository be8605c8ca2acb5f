-- kernel-lsp user commands and autocommands. The server itself is configured
-- by lsp/kernel_lsp.lua; enable it with `vim.lsp.enable('kernel_lsp')` or
-- `require('kernel_lsp').setup()`.

if vim.g.loaded_kernel_lsp then
  return
end
vim.g.loaded_kernel_lsp = true

if vim.fn.has('nvim-0.11') == 0 then
  vim.notify('kernel-lsp needs Neovim 0.11 or newer', vim.log.levels.WARN)
  return
end

local function kl()
  return require('kernel_lsp')
end

local command = vim.api.nvim_create_user_command

command('KernelBench', function()
  kl().benchmark()
end, { desc = 'kernel-lsp: benchmark this file against its PyTorch reference' })

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

local codes = {}
for i = 1, 10 do
  codes[#codes + 1] = string.format('KL%03d', i)
end
for i = 901, 909 do
  codes[#codes + 1] = 'KL' .. i
end

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
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'kernel_lsp' then
      kl().on_attach(client, ev.buf)
    end
  end,
})

vim.api.nvim_create_autocmd('LspDetach', {
  group = group,
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'kernel_lsp' then
      kl().on_detach(client, ev.buf)
    end
  end,
})

vim.api.nvim_create_autocmd('LspProgress', {
  group = group,
  desc = 'kernel-lsp: show benchmark progress',
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and client.name == 'kernel_lsp' then
      kl().on_progress(ev)
    end
  end,
})
