using System;
using Acme.Storage;

namespace Acme.Web
{
    /// <summary>Serves users.</summary>
    [ApiController]
    public partial class UsersController : ControllerBase, IDisposable
    {
        private readonly IRepo _repo;
        public string Name { get; set; }

        public UsersController(IRepo repo) { _repo = repo; }

        /// <summary>Lists users.</summary>
        public List<User> List(int max)
        {
            if (max < 0)
            {
                throw new ArgumentException("max");
            }
            return _repo.FindAll(max);
        }
    }

    public interface IRepo { List<User> FindAll(int max); }
    public enum Role { Admin, User }
}
