-- :checkhealth kernel_lsp

local M = {}

function M.check()
  local h = vim.health
  h.start('kernel-lsp')
  if vim.fn.has('nvim-0.11') == 1 then
    h.ok('Neovim ' .. tostring(vim.version()))
  else
    h.error('Neovim 0.11 or newer is needed (vim.lsp.config / vim.lsp.enable)')
    return
  end

  local config = vim.lsp.config.kernel_lsp
  if not config then
    h.error('no `kernel_lsp` config: is editors/nvim on the runtimepath (it holds lsp/kernel_lsp.lua)?')
    return
  end
  local cmd = type(config.cmd) == 'table' and config.cmd or nil
  if cmd and vim.fn.executable(cmd[1]) == 1 then
    local out = vim.system({ cmd[1], '--version' }, { text = true }):wait(5000)
    h.ok(string.format('server: %s (%s)', vim.fn.exepath(cmd[1]), vim.trim(out.stdout or '')))
  elseif cmd then
    h.error('server `' .. cmd[1] .. '` is not executable', {
      'Put `kernel-lsp` on PATH (cargo install --path server), or',
      "vim.lsp.config('kernel_lsp', { cmd = { '/path/to/kernel-lsp', 'serve' } })",
    })
  end

  if vim.lsp.is_enabled('kernel_lsp') then
    h.ok('enabled (vim.lsp.enable)')
  else
    h.warn("not enabled: call vim.lsp.enable('kernel_lsp') or require('kernel_lsp').setup()")
  end
  if vim.g.kernel_lsp_only_triton == false then
    h.info('attaches to every Python buffer')
  else
    h.info('attaches to Python buffers that mention triton')
  end

  local settings = (config.settings or {})['kernel-lsp'] or {}
  local python = settings.python
    or (vim.env.VIRTUAL_ENV and (vim.env.VIRTUAL_ENV .. '/bin/python'))
    or 'python3'
  if vim.fn.executable(python) == 1 then
    local out = vim.system({ python, '-c', 'import torch, triton; print(torch.__version__, triton.__version__)' }, { text = true }):wait(60000)
    if out.code == 0 then
      h.ok(string.format('benchmarks: %s has torch + triton (%s)', python, vim.trim(out.stdout)))
    else
      h.warn(string.format('benchmarks: %s cannot import torch and triton', python), {
        "set the interpreter: require('kernel_lsp').setup({ python = '.venv/bin/python' })",
      })
    end
  else
    h.warn('benchmarks: no Python interpreter `' .. python .. '` (relative paths are resolved by the server)')
  end

  local clients = vim.lsp.get_clients({ name = 'kernel_lsp' })
  for _, c in ipairs(clients) do
    h.info(string.format('client %d: root %s, %d buffer(s)', c.id, c.root_dir or '?', vim.tbl_count(c.attached_buffers)))
  end
end

return M
