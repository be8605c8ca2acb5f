-- The server binary cannot be started: vim.lsp.enable() on its own only
-- writes that to lsp.log. The plugin says it once, with the setting to change.
local H = ... -- tests/helpers.lua, passed by its run()

-- Every vim.notify call, as the user would see it.
local notes = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  notes[#notes + 1] = { msg = msg, level = level }
  return real_notify(msg, level, opts)
end

local function kernel_notes()
  return vim.tbl_filter(function(n)
    return n.msg:find('kernel-lsp: cannot start the server', 1, true) == 1
  end, notes)
end

-- run.sh puts a `kernel-lsp` on PATH for the other tests: take that directory out.
local bin_dir = vim.fs.dirname(vim.fn.exepath('kernel-lsp'))
vim.env.PATH = table.concat(
  vim.tbl_filter(function(p) return p ~= bin_dir end, vim.split(vim.env.PATH, ':', { plain = true })),
  ':'
)
vim.lsp.enable('kernel_lsp')
local dir = H.tmpdir()

H.test('kernel-lsp not on PATH: one error naming the cmd setting, for a Triton buffer only', function()
  H.eq(0, vim.fn.executable('kernel-lsp'), 'kernel-lsp must not be on PATH for this test')
  -- A Python file the server would not attach to: nothing to say.
  local plain = dir .. '/plain.py'
  vim.fn.writefile({ 'def f(x):', '    return x + 1' }, plain)
  H.open(plain)
  vim.wait(500)
  H.eq(0, #kernel_notes(), 'notifications for a file without triton')

  local buf = H.open(H.copy('examples/tanh_activation/candidate_tl_tanh.py', dir))
  H.wait(5000, function() return #kernel_notes() > 0 end, 'the missing-binary notification')
  local n = kernel_notes()[1]
  H.eq(vim.log.levels.ERROR, n.level, 'level')
  H.contains(n.msg, '`kernel-lsp` is not an executable file on PATH')
  H.contains(n.msg, 'Set the `cmd` setting to the binary')
  H.contains(n.msg, "require('kernel_lsp').setup({ cmd = '/path/to/kernel-lsp' })")
  H.contains(n.msg, 'cargo install --path server')
  H.eq(0, #vim.lsp.get_clients({ bufnr = buf, name = 'kernel_lsp' }), 'clients')

  -- Once: another kernel file says nothing more.
  H.open(H.copy('examples/gru/gru_python_loop.py', dir))
  vim.wait(500)
  H.eq(1, #kernel_notes(), 'notifications after a second Triton file')
end)

H.test('a cmd set to a missing path names that path', function()
  require('kernel_lsp')._missing_binary_reported = nil
  local missing = dir .. '/no-such/kernel-lsp'
  require('kernel_lsp').setup({ cmd = missing })
  H.open(H.copy('examples/softmax_arange/candidate_arange_runtime.py', dir))
  H.wait(5000, function() return #kernel_notes() > 1 end, 'the missing-binary notification')
  local n = kernel_notes()[2]
  H.eq(vim.log.levels.ERROR, n.level, 'level')
  H.contains(n.msg, 'cannot start the server: `' .. missing .. '` is not an executable file.')
  H.contains(n.msg, '`cmd` setting')
end)
