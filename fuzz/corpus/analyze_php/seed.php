<?php
namespace App\Http;

use App\Models\User;
use Psr\Log\LoggerInterface;

/**
 * Handles users.
 */
class UserController extends Controller implements Responder
{
    use Loggable;
    private $repo;
    const LIMIT = 10;

    /** Shows one user. */
    public function show(int $id): User
    {
        if ($id < 0) {
            throw new \InvalidArgumentException("id");
        }
        return $this->repo->find($id);
    }
}

function helper($x) { return strtolower($x); }
