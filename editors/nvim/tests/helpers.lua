-- A small test runner for the kernel-lsp Neovim plugin, run inside a real
-- `nvim --headless --clean` (see run.sh). Each test file calls H.test(name,
-- fn); failures and timeouts are caught, reported and counted; the counts go
-- to $KERNEL_LSP_NVIM_RESULTS for run.sh to add up.

local H = {}

H.repo = assert(os.getenv('KERNEL_LSP_REPO'), 'KERNEL_LSP_REPO is not set (run tests/run.sh)')
H.bin = assert(os.getenv('KERNEL_LSP_BIN'), 'KERNEL_LSP_BIN is not set (run tests/run.sh)')
H.python = os.getenv('KERNEL_LSP_TEST_PYTHON')

local passed, failed = 0, 0

local function out(s)
  io.stdout:write(s .. '\n')
  io.stdout:flush()
end

--- Runs one test; an error or timeout inside fails it, the next one still runs.
function H.test(name, fn)
  local start = vim.uv.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  local secs = (vim.uv.hrtime() - start) / 1e9
  if ok then
    passed = passed + 1
    out(string.format('  ok    %s (%.1fs)', name, secs))
  else
    failed = failed + 1
    out(string.format('  FAIL  %s (%.1fs)\n        %s', name, secs, tostring(err):gsub('\n', '\n        ')))
  end
end

function H.fail(msg)
  error(msg, 2)
end

function H.ok(cond, msg)
  if not cond then
    error('assertion failed: ' .. (msg or '?'), 2)
  end
  return cond
end

function H.eq(want, got, msg)
  if not vim.deep_equal(want, got) then
    error(string.format('%s: want %s, got %s', msg or 'not equal', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.contains(haystack, needle, msg)
  if type(haystack) ~= 'string' or not haystack:find(needle, 1, true) then
    error(string.format('%s: %s does not contain %s', msg or 'missing text', vim.inspect(haystack), vim.inspect(needle)), 2)
  end
end

--- Waits until `cond()` is truthy, or fails with what it waited for.
function H.wait(ms, cond, what)
  local value
  local ok = vim.wait(ms, function()
    value = cond()
    return value
  end, 50)
  if not ok then
    error(string.format('timed out after %d ms waiting for %s', ms, what), 2)
  end
  return value
end

--- A fresh temporary directory.
function H.tmpdir()
  local d = vim.fn.tempname()
  vim.fn.mkdir(d, 'p')
  return d
end

--- Copies a repository file into `dir` (as `name`, default its own name); returns the new path.
function H.copy(rel, dir, name)
  local src = H.repo .. '/' .. rel
  local lines = vim.fn.readfile(src, 'b')
  local dst = dir .. '/' .. (name or vim.fn.fnamemodify(src, ':t'))
  vim.fn.writefile(lines, dst, 'b')
  return dst
end

--- Opens a file in the current window; returns its buffer.
function H.open(path)
  vim.cmd('edit ' .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

--- The kernel_lsp client attached to the buffer, once it is initialized.
function H.client(bufnr, ms)
  return H.wait(ms or 20000, function()
    local c = vim.lsp.get_clients({ bufnr = bufnr, name = 'kernel_lsp' })[1]
    return c and c.initialized and c
  end, 'the kernel_lsp client to attach to buffer ' .. bufnr)
end

--- The sorted, distinct diagnostic codes of the buffer.
function H.codes(bufnr)
  local seen, codes = {}, {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local c = d.code and tostring(d.code)
    if c and not seen[c] then
      seen[c] = true
      codes[#codes + 1] = c
    end
  end
  table.sort(codes)
  return codes
end

function H.diagnostic(bufnr, code)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == code then
      return d
    end
  end
end

--- Waits for a diagnostic with `code` in the buffer.
function H.wait_code(bufnr, code, ms)
  return H.wait(ms or 20000, function()
    return H.diagnostic(bufnr, code)
  end, string.format('a %s diagnostic (have: %s)', code, table.concat(H.codes(bufnr), ', ')))
end

function H.text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
end

--- The code lens titles of a buffer, as `{ line (0-based), title }`.
function H.lenses(bufnr)
  local r = {}
  for _, l in ipairs(vim.lsp.codelens.get(bufnr)) do
    if l.command then
      r[#r + 1] = { line = l.range.start.line, title = l.command.title }
    end
  end
  return r
end

--- The lines of every floating window.
function H.floats()
  local r = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(w).relative ~= '' then
      r[#r + 1] = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false), '\n')
    end
  end
  return r
end

--- The first line (0-based) that contains `s`.
function H.line_of(bufnr, s)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    if l:find(s, 1, true) then
      return i - 1
    end
  end
end

--- Runs a test file and exits nvim with the counts written for run.sh.
function H.run(file)
  vim.o.swapfile = false
  vim.o.more = false
  vim.o.shortmess = vim.o.shortmess .. 'IF'
  out('# ' .. vim.fn.fnamemodify(file, ':t'))
  local ok, err = xpcall(function()
    assert(loadfile(file))(H)
  end, debug.traceback)
  if not ok then
    failed = failed + 1
    out('  FAIL  loading ' .. file .. '\n        ' .. tostring(err))
  end
  local results = os.getenv('KERNEL_LSP_NVIM_RESULTS')
  if results then
    vim.fn.writefile({ string.format('%d %d', passed, failed) }, results)
  end
  for _, c in ipairs(vim.lsp.get_clients()) do
    c:stop(true)
  end
  vim.cmd('qall!')
end

return H
